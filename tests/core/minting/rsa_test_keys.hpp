#pragma once
// RSA keys made once per test run, in every PEM form a configured key may
// take, and the checks a JWT's receiver makes: the tests judge vaultgate's
// JWTs with OpenSSL's verifier, not with vaultgate's signer.
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/secret.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate::minting::test {

struct RsaTestKey {
    std::shared_ptr<EVP_PKEY> key;
    std::string pkcs1_pem;  // -----BEGIN RSA PRIVATE KEY-----
    std::string pkcs8_pem;  // -----BEGIN PRIVATE KEY-----
    std::string public_pem;
};

inline std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

inline std::shared_ptr<EVP_PKEY> generate_key(const char* type, std::size_t rsa_bits = 2048) {
    EVP_PKEY* raw = std::string_view(type) == "RSA" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", rsa_bits)
                                                    : EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    if (!raw) throw std::runtime_error("cannot generate a test key");
    return {raw, EVP_PKEY_free};
}

// Writes `key` with one of OpenSSL's PEM writers.
template <class Write>
std::string pem_of(Write write) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    if (write(bio.get()) != 1) throw std::runtime_error("cannot write a test key");
    return bio_text(bio.get());
}

inline RsaTestKey make_rsa_test_key(std::size_t bits = 2048) {
    RsaTestKey k;
    k.key = generate_key("RSA", bits);
    EVP_PKEY* p = k.key.get();
    k.pkcs1_pem = pem_of(
        [&](BIO* b) { return PEM_write_bio_PrivateKey_traditional(b, p, nullptr, nullptr, 0, nullptr, nullptr); });
    k.pkcs8_pem = pem_of([&](BIO* b) { return PEM_write_bio_PrivateKey(b, p, nullptr, nullptr, 0, nullptr, nullptr); });
    k.public_pem = pem_of([&](BIO* b) { return PEM_write_bio_PUBKEY(b, p); });
    return k;
}

// One 2048-bit key for the whole run: generating one takes a noticeable moment.
inline const RsaTestKey& rsa_test_key() {
    static const RsaTestKey key = make_rsa_test_key();
    return key;
}

inline std::vector<std::string> jwt_parts(std::string_view jwt) {
    std::vector<std::string> parts(1);
    for (const char c : jwt) {
        if (c == '.')
            parts.emplace_back();
        else
            parts.back() += c;
    }
    return parts;
}

// base64url without padding (RFC 7515 section 2), as a receiver decodes it.
inline std::string base64url_decode(std::string_view in) {
    if (in.find_first_of("+/=") != std::string_view::npos) throw std::runtime_error("not unpadded base64url");
    std::string standard(in);
    for (char& c : standard) {
        if (c == '-') c = '+';
        if (c == '_') c = '/';
    }
    while (standard.size() % 4 != 0) standard += '=';
    auto out = base64_decode(standard);
    if (!out) throw std::runtime_error("not base64url");
    return *out;
}

inline nlohmann::json jwt_json(std::string_view jwt, std::size_t part) {
    return nlohmann::json::parse(base64url_decode(jwt_parts(jwt).at(part)));
}

// RS256 verification of the whole JWT against `key`'s public half.
inline bool rs256_verifies(std::string_view jwt, EVP_PKEY* key) {
    const auto parts = jwt_parts(jwt);
    if (parts.size() != 3) return false;
    const std::string signed_part = parts[0] + "." + parts[1];
    const std::string signature = base64url_decode(parts[2]);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    return EVP_DigestVerifyInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr, key, nullptr) == 1 &&
           EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size()) == 1;
}

}  // namespace vaultgate::minting::test
