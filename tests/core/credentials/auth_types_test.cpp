// The auth shapes of signed and minted credentials: what each type reads,
// needs and refuses, and which vault credentials it names.
#include "vaultgate/credentials/validation.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vaultgate::validation {
namespace {

using Names = std::vector<std::string>;

TEST(AuthTypes, AwsSigv4) {
    AuthSpec spec;
    ASSERT_FALSE(build_auth_spec(
        {{"type", "aws-sigv4"}, {"access_key_id", "AK"}, {"secret_access_key", "SK"}, {"region", "eu-west-1"}}, &spec));
    EXPECT_EQ(spec.type, AuthType::aws_sigv4);
    EXPECT_EQ(spec.region, "eu-west-1");
    EXPECT_EQ(spec.service, "");  // derived from the host
    EXPECT_EQ(spec.credential_names(), (Names{"AK", "SK"}));
    EXPECT_EQ(spec.primary_credential(), "SK");
    EXPECT_EQ(spec.target_header(), "Authorization");
    EXPECT_TRUE(spec.is_signed());
    EXPECT_FALSE(spec.is_minted());

    ASSERT_FALSE(build_auth_spec(
        {{"type", "aws-sigv4"}, {"access_key_id", "AK"}, {"secret_access_key", "SK"}, {"session_token", "ST"}}, &spec));
    EXPECT_EQ(spec.credential_names(), (Names{"AK", "SK", "ST"}));
}

TEST(AuthTypes, OAuth2ClientCredentials) {
    AuthSpec spec;
    ASSERT_FALSE(build_auth_spec({{"type", "oauth2-client-credentials"},
                                  {"token_url", "https://auth.example.com/oauth/token"},
                                  {"client_id", "CID"},
                                  {"client_secret", "CS"},
                                  {"scope", "read write"}},
                                 &spec));
    EXPECT_EQ(spec.client_auth, ClientAuth::basic);  // the default
    EXPECT_EQ(spec.scope, "read write");
    EXPECT_EQ(spec.credential_names(), (Names{"CID", "CS"}));
    EXPECT_EQ(spec.primary_credential(), "CS");
    EXPECT_TRUE(spec.is_minted());
}

TEST(AuthTypes, GithubApp) {
    AuthSpec spec;
    ASSERT_FALSE(build_auth_spec(
        {{"type", "github-app"}, {"app_id", "123456"}, {"installation_id", "7890"}, {"private_key", "GH_KEY"}}, &spec));
    EXPECT_EQ(spec.api_url, "https://api.github.com");
    EXPECT_EQ(spec.scheme, TokenScheme::bearer);
    EXPECT_EQ(spec.credential_names(), (Names{"GH_KEY"}));
}

TEST(AuthTypes, JwtBearer) {
    AuthSpec spec;
    ASSERT_FALSE(build_auth_spec(
        {{"type", "jwt-bearer"}, {"key", "SA"}, {"scopes", Names{"https://www.googleapis.com/auth/cloud-platform"}}},
        &spec));
    EXPECT_EQ(spec.scopes, (Names{"https://www.googleapis.com/auth/cloud-platform"}));
    EXPECT_EQ(spec.token_url, "");  // the JSON's token_uri
    EXPECT_EQ(spec.credential_names(), (Names{"SA"}));
}

TEST(AuthTypes, Refusals) {
    struct Case {
        AuthFields fields;
        std::string field;
        std::string message;
    };
    const std::vector<Case> cases = {
        {{{"type", "aws-sigv4"}, {"access_key_id", "AK"}}, "", "missing required key 'secret_access_key'"},
        {{{"type", "aws-sigv4"}, {"access_key_id", "AK"}, {"secret_access_key", "SK"}, {"region", "US East"}},
         "region",
         "expected lower-case letters"},
        {{{"type", "aws-sigv4"}, {"access_key_id", "AK"}, {"secret_access_key", "SK"}, {"key", "K"}},
         "key",
         "not used by auth type aws-sigv4"},
        {{{"type", "oauth2-client-credentials"},
          {"token_url", "http://auth.example/token"},
          {"client_id", "I"},
          {"client_secret", "S"}},
         "token_url",
         "expected an https:// URL"},
        {{{"type", "oauth2-client-credentials"},
          {"token_url", "https://user:pw@auth.example/token"},
          {"client_id", "I"},
          {"client_secret", "S"}},
         "token_url",
         "expected a URL without user information"},
        {{{"type", "oauth2-client-credentials"},
          {"token_url", "https://auth.example/token"},
          {"client_id", "I"},
          {"client_secret", "S"},
          {"client_auth", "jwt"}},
         "client_auth",
         "expected basic or post"},
        {{{"type", "github-app"}, {"app_id", "12a"}, {"installation_id", "1"}, {"private_key", "K"}},
         "app_id",
         "expected a number"},
        {{{"type", "github-app"}, {"app_id", "1"}, {"installation_id", "1"}, {"private_key", "K"}, {"scheme", "token"}},
         "scheme",
         "expected bearer or basic"},
        {{{"type", "jwt-bearer"}, {"key", "SA"}, {"scopes", "cloud-platform"}}, "scopes", "expected a list of scopes"},
        {{{"type", "jwt-bearer"}, {"key", "SA"}, {"scopes", Names{}}}, "scopes", "expected at least one scope"},
        {{{"type", "jwt-bearer"}, {"key", "SA"}, {"scopes", Names{"a b"}}}, "scopes", "expected scopes without spaces"},
        {{{"type", "jwt-bearer"}, {"key", Names{"SA"}}, {"scopes", Names{"a"}}},
         "key",
         "expected a string, got a list"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.message);
        AuthSpec spec;
        const auto err = build_auth_spec(c.fields, &spec);
        ASSERT_TRUE(err.has_value());
        EXPECT_EQ(err->field, c.field);
        EXPECT_EQ(err->message.rfind(c.message, 0), 0u) << err->message;
    }
}

}  // namespace
}  // namespace vaultgate::validation
