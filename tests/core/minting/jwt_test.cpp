#include "vaultgate/minting/jwt.hpp"

#include "rsa_test_keys.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>

namespace vaultgate::minting {
namespace {

using test::jwt_json;
using test::jwt_parts;
using test::rsa_test_key;

const nlohmann::json claims{{"iss", "123456"}, {"iat", 1700000000}, {"exp", 1700000600}};

TEST(Rs256JwtTest, IsHeaderClaimsAndSignatureInUnpaddedBase64url) {
    const Secret jwt = sign_rs256_jwt(claims, Secret(rsa_test_key().pkcs8_pem));
    const auto parts = jwt_parts(jwt.reveal());
    ASSERT_EQ(parts.size(), 3u);
    for (const auto& part : parts) EXPECT_EQ(part.find_first_of("+/="), std::string::npos) << part;
    EXPECT_EQ(jwt_json(jwt.reveal(), 0), (nlohmann::json{{"alg", "RS256"}, {"typ", "JWT"}}));
    EXPECT_EQ(jwt_json(jwt.reveal(), 1), claims);
    EXPECT_EQ(test::base64url_decode(parts[2]).size(), 256u);  // one RSA-2048 block
    EXPECT_TRUE(test::rs256_verifies(jwt.reveal(), rsa_test_key().key.get()));
}

TEST(Rs256JwtTest, SignsWithPkcs1AndPkcs8KeysAlike) {
    ASSERT_NE(rsa_test_key().pkcs1_pem.find("BEGIN RSA PRIVATE KEY"), std::string::npos);
    ASSERT_NE(rsa_test_key().pkcs8_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
    const Secret from_pkcs1 = sign_rs256_jwt(claims, Secret(rsa_test_key().pkcs1_pem));
    const Secret from_pkcs8 = sign_rs256_jwt(claims, Secret(rsa_test_key().pkcs8_pem));
    EXPECT_TRUE(test::rs256_verifies(from_pkcs1.reveal(), rsa_test_key().key.get()));
    EXPECT_TRUE(test::rs256_verifies(from_pkcs8.reveal(), rsa_test_key().key.get()));
    // PKCS#1 v1.5 signatures are deterministic: one key, one input, one JWT.
    EXPECT_EQ(from_pkcs1.reveal(), from_pkcs8.reveal());
}

// A credential value holds no line break: the PEM comes with "\n" written out.
TEST(Rs256JwtTest, ReadsAPemOnOneLineWithItsLineBreaksEscaped) {
    for (const std::string& pem : {rsa_test_key().pkcs1_pem, rsa_test_key().pkcs8_pem}) {
        std::string one_line;
        for (char c : pem) one_line += c == '\n' ? std::string("\\n") : std::string(1, c);
        ASSERT_EQ(one_line.find('\n'), std::string::npos);
        EXPECT_EQ(sign_rs256_jwt(claims, Secret(one_line)).reveal(), sign_rs256_jwt(claims, Secret(pem)).reveal());
        EXPECT_NO_THROW(check_rs256_key(Secret(one_line)));
    }
}

TEST(Rs256JwtTest, NamesTheKeyIdInTheHeaderWhenGiven) {
    const Secret jwt = sign_rs256_jwt(claims, Secret(rsa_test_key().pkcs8_pem), "key-7");
    EXPECT_EQ(jwt_json(jwt.reveal(), 0), (nlohmann::json{{"alg", "RS256"}, {"kid", "key-7"}, {"typ", "JWT"}}));
    EXPECT_TRUE(test::rs256_verifies(jwt.reveal(), rsa_test_key().key.get()));
}

TEST(Rs256JwtTest, AnotherKeyDoesNotVerifyIt) {
    const auto other = test::make_rsa_test_key();
    const Secret jwt = sign_rs256_jwt(claims, Secret(other.pkcs8_pem));
    EXPECT_TRUE(test::rs256_verifies(jwt.reveal(), other.key.get()));
    EXPECT_FALSE(test::rs256_verifies(jwt.reveal(), rsa_test_key().key.get()));
}

// The message of a key that fails: none of the key's text, whatever is wrong with it.
std::string mint_error_of(const std::string& pem) {
    try {
        sign_rs256_jwt(claims, Secret(pem));
    } catch (const MintError& e) {
        EXPECT_THROW(check_rs256_key(Secret(pem)), MintError);
        return e.what();
    }
    ADD_FAILURE() << "no MintError";
    return {};
}

TEST(Rs256JwtTest, RefusesWhatIsNotAnUnencryptedRsaKeyWithoutQuotingIt) {
    const auto& key = rsa_test_key().pkcs8_pem;
    const std::string body = key.substr(key.find('\n') + 1, 64);  // a line of the key's base64
    const std::string truncated = key.substr(0, key.size() / 2);
    const std::string corrupted =
        "-----BEGIN PRIVATE KEY-----\nSECRETSECRETSECRET" + body + "\n-----END PRIVATE KEY-----\n";
    const std::string ec = test::pem_of([&](BIO* b) {
        return PEM_write_bio_PrivateKey(b, test::generate_key("EC").get(), nullptr, nullptr, 0, nullptr, nullptr);
    });
    const std::string encrypted = test::pem_of([&](BIO* b) {
        return PEM_write_bio_PKCS8PrivateKey(b, rsa_test_key().key.get(), EVP_aes_256_cbc(), nullptr, 0, nullptr,
                                             const_cast<char*>("passphrase"));
    });
    ASSERT_NE(encrypted.find("ENCRYPTED PRIVATE KEY"), std::string::npos);
    const auto short_key = test::make_rsa_test_key(1024);

    for (const std::string& bad : {std::string(), std::string("SECRETSECRETSECRET"), truncated, corrupted,
                                   rsa_test_key().public_pem, encrypted}) {
        const std::string message = mint_error_of(bad);
        EXPECT_NE(message.find("not an unencrypted PEM private key"), std::string::npos) << message;
        EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
        EXPECT_EQ(message.find(body.substr(0, 16)), std::string::npos) << message;
    }
    EXPECT_NE(mint_error_of(ec).find("not an RSA key"), std::string::npos);
    EXPECT_NE(mint_error_of(short_key.pkcs8_pem).find("shorter than 2048 bits"), std::string::npos);
    EXPECT_NO_THROW(check_rs256_key(Secret(rsa_test_key().pkcs1_pem)));
}

TEST(Rs256JwtTest, RefusesClaimsThatAreNotUtf8) {
    EXPECT_THROW(sign_rs256_jwt({{"iss", "app\xff"}}, Secret(rsa_test_key().pkcs8_pem)), MintError);
    EXPECT_THROW(sign_rs256_jwt(claims, Secret(rsa_test_key().pkcs8_pem), "kid\xc3"), MintError);
}

// PyJWT, an implementation vaultgate shares nothing with, accepts the JWT.
TEST(Rs256JwtTest, PyJwtVerifiesIt) {
    const char* python = "/usr/bin/python3";
    vaultgate::test::TempDir dir;
    const Secret jwt = sign_rs256_jwt({{"iss", "svc@example.iam.gserviceaccount.com"},
                                       {"aud", "https://oauth2.example/token"},
                                       {"iat", 1700000000},
                                       {"exp", 1700003600},
                                       {"scope", "a b"}},
                                      Secret(rsa_test_key().pkcs1_pem), "kid-1");
    const std::string jwt_file = dir.write("jwt", jwt.reveal());
    const std::string key_file = dir.write("key.pem", rsa_test_key().public_pem);
    const std::string command =
        std::string(python) +
        " -c 'import sys, json, jwt\n"
        "key = open(sys.argv[2]).read()\n"
        "token = open(sys.argv[1]).read()\n"
        "claims = jwt.decode(token, key, algorithms=[\"RS256\"], audience=\"https://oauth2.example/token\",\n"
        "                    options={\"verify_exp\": False, \"verify_iat\": False})\n"
        "print(json.dumps([jwt.get_unverified_header(token), claims]))' " +
        jwt_file + " " + key_file + " 2>&1";
    std::unique_ptr<FILE, decltype(&pclose)> pipe(popen(command.c_str(), "r"), pclose);
    ASSERT_TRUE(pipe);
    std::string output;
    std::array<char, 512> buf{};
    while (const std::size_t n = fread(buf.data(), 1, buf.size(), pipe.get())) output.append(buf.data(), n);
    const auto answer = nlohmann::json::parse(output, nullptr, false);
    ASSERT_FALSE(answer.is_discarded()) << output;
    EXPECT_EQ(answer[0], (nlohmann::json{{"alg", "RS256"}, {"kid", "kid-1"}, {"typ", "JWT"}}));
    EXPECT_EQ(answer[1]["iss"], "svc@example.iam.gserviceaccount.com");
    EXPECT_EQ(answer[1]["scope"], "a b");
    EXPECT_EQ(answer[1]["exp"], 1700003600);
}

}  // namespace
}  // namespace vaultgate::minting
