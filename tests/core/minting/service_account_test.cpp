#include "vaultgate/minting/service_account.hpp"

#include "rsa_test_keys.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace vaultgate::minting {
namespace {

nlohmann::json google_key() {
    return {{"type", "service_account"},
            {"project_id", "demo"},
            {"private_key_id", "0123abcd"},
            {"private_key", test::rsa_test_key().pkcs8_pem},
            {"client_email", "svc@demo.iam.gserviceaccount.com"},
            {"client_id", "1234567890"},
            {"auth_uri", "https://accounts.google.com/o/oauth2/auth"},
            {"token_uri", "https://oauth2.googleapis.com/token"}};
}

TEST(ServiceAccountTest, ReadsGooglesKeyFile) {
    const auto key = parse_service_account(Secret(google_key().dump(2)));
    EXPECT_EQ(key.client_email, "svc@demo.iam.gserviceaccount.com");
    EXPECT_EQ(key.private_key.reveal(), test::rsa_test_key().pkcs8_pem);
    EXPECT_EQ(key.token_uri, "https://oauth2.googleapis.com/token");
    EXPECT_EQ(key.key_id, "0123abcd");
}

TEST(ServiceAccountTest, DefaultsTheTokenUriAndTheKeyId) {
    auto json = google_key();
    json.erase("token_uri");
    json.erase("private_key_id");
    json.erase("type");
    const auto key = parse_service_account(Secret(json.dump()));
    EXPECT_EQ(key.token_uri, "https://oauth2.googleapis.com/token");
    EXPECT_EQ(key.token_uri, google_token_uri);
    EXPECT_EQ(key.key_id, "");
    json["token_uri"] = "https://auth.example.com/token";
    EXPECT_EQ(parse_service_account(Secret(json.dump())).token_uri, "https://auth.example.com/token");
}

// The message, which must name the field and quote nothing of the file.
std::string error_of_text(const std::string& text) {
    try {
        parse_service_account(Secret(text));
    } catch (const MintError& e) {
        const std::string message = e.what();
        EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
        EXPECT_EQ(message.find("svc@"), std::string::npos) << message;
        EXPECT_EQ(message.find("MII"), std::string::npos) << message;  // a PEM key's first base64
        return message;
    }
    ADD_FAILURE() << "no MintError for " << text.substr(0, 40);
    return {};
}

std::string error_of(const nlohmann::json& key) { return error_of_text(key.dump()); }

TEST(ServiceAccountTest, NamesTheMissingOrBadFieldAndNoValue) {
    const std::pair<const char*, nlohmann::json> cases[] = {
        {"\"client_email\" is missing", nullptr},
        {"\"client_email\" is not a string", 42},
        {"\"client_email\" is empty", ""},
    };
    for (const auto& [expected, value] : cases) {
        auto json = google_key();
        if (value.is_null())
            json.erase("client_email");
        else
            json["client_email"] = value;
        EXPECT_NE(error_of(json).find(expected), std::string::npos) << expected;
    }
    auto json = google_key();
    json.erase("private_key");
    EXPECT_NE(error_of(json).find("\"private_key\" is missing"), std::string::npos);
    json["private_key"] = nlohmann::json::array({"SECRET"});
    EXPECT_NE(error_of(json).find("\"private_key\" is not a string"), std::string::npos);
    json["private_key"] = "-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n-----END PRIVATE KEY-----\n";
    EXPECT_NE(error_of(json).find("\"private_key\" is not an unencrypted RSA private key"), std::string::npos);
    json["private_key"] = test::rsa_test_key().pkcs1_pem;
    EXPECT_NO_THROW(parse_service_account(Secret(json.dump())));

    json = google_key();
    json["token_uri"] = "http://oauth2.example/token";
    EXPECT_NE(error_of(json).find("\"token_uri\" is not an https URL"), std::string::npos);
    json["token_uri"] = 7;
    EXPECT_NE(error_of(json).find("\"token_uri\" is not a string"), std::string::npos);
    json = google_key();
    json["private_key_id"] = 7;
    EXPECT_NE(error_of(json).find("\"private_key_id\" is not a string"), std::string::npos);
    json = google_key();
    json["type"] = "authorized_user";
    EXPECT_NE(error_of(json).find("\"type\" is not service_account"), std::string::npos);
}

TEST(ServiceAccountTest, RefusesTextThatIsNotAJsonObjectWithoutQuotingIt) {
    EXPECT_EQ(error_of_text("{\"private_key\": \"SECRET"), "the service-account key is not valid JSON");
    EXPECT_EQ(error_of_text("SECRET"), "the service-account key is not valid JSON");
    EXPECT_EQ(error_of_text(""), "the service-account key is not valid JSON");
    EXPECT_EQ(error_of_text("[\"SECRET\"]"), "the service-account key is not a JSON object");
}

}  // namespace
}  // namespace vaultgate::minting
