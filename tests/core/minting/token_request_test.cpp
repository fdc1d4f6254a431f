#include "vaultgate/minting/token_request.hpp"

#include "rsa_test_keys.hpp"
#include "vaultgate/minting/jwt.hpp"
#include "vaultgate/minting/service_account.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

namespace vaultgate::minting {
namespace {

using namespace std::chrono_literals;

// 2023-11-14T22:13:20Z, and half a second on, which the JWT's whole seconds drop.
const auto now = std::chrono::system_clock::time_point(1700000000s) + 500ms;

std::map<std::string, std::string> headers_of(const TokenRequest& request) {
    std::map<std::string, std::string> out;
    for (const auto& [name, value] : request.headers) {
        EXPECT_FALSE(out.contains(name)) << name << " twice";
        out[name] = std::string(value.reveal());
    }
    return out;
}

// Python's quote_plus gives the same: "my+id%3A1%26x%3D%2B%2F%25" and "p%40ss+word~%2B%C3%A9".
const Secret client_id("my id:1&x=+/%");
const Secret client_secret("p@ss word~+\xc3\xa9");

TEST(ClientCredentialsRequestTest, BasicAuthFormEncodesIdAndSecretBeforeBase64) {
    const auto request =
        client_credentials_request("https://auth.example.com/oauth/token", client_id, client_secret, "read write:all",
                                   "https://api.example.com/ a&b", ClientAuth::basic);
    EXPECT_EQ(request.url, "https://auth.example.com/oauth/token");
    EXPECT_EQ(headers_of(request),
              (std::map<std::string, std::string>{
                  {"Accept", "application/json"},
                  {"Authorization", "Basic bXkraWQlM0ExJTI2eCUzRCUyQiUyRiUyNTpwJTQwc3Mrd29yZH4lMkIlQzMlQTk="},
                  {"Content-Type", "application/x-www-form-urlencoded"}}));
    EXPECT_EQ(request.body.reveal(),
              "grant_type=client_credentials&scope=read+write%3Aall&audience=https%3A%2F%2Fapi.example.com%2F+a%26b");
}

TEST(ClientCredentialsRequestTest, PostAuthSendsIdAndSecretAsFormFields) {
    const auto request = client_credentials_request("https://auth.example.com/token", client_id, client_secret, "", "",
                                                    ClientAuth::post);
    EXPECT_EQ(headers_of(request),
              (std::map<std::string, std::string>{{"Accept", "application/json"},
                                                  {"Content-Type", "application/x-www-form-urlencoded"}}));
    EXPECT_EQ(request.body.reveal(),
              "grant_type=client_credentials&client_id=my+id%3A1%26x%3D%2B%2F%25"
              "&client_secret=p%40ss+word~%2B%C3%A9");
}

TEST(ClientCredentialsRequestTest, LeavesOutEmptyScopeAndAudience) {
    const Secret id("client"), secret("s3cret");
    EXPECT_EQ(client_credentials_request("https://a/t", id, secret, "", "", ClientAuth::basic).body.reveal(),
              "grant_type=client_credentials");
    EXPECT_EQ(client_credentials_request("https://a/t", id, secret, "s", "", ClientAuth::basic).body.reveal(),
              "grant_type=client_credentials&scope=s");
    EXPECT_EQ(client_credentials_request("https://a/t", id, secret, "", "aud", ClientAuth::basic).body.reveal(),
              "grant_type=client_credentials&audience=aud");
    // RFC 6749 2.3.1's own example: no byte needs encoding, so it is plain Basic.
    EXPECT_EQ(
        headers_of(client_credentials_request("https://a/t", Secret("s6BhdRkqt3"), Secret("7Fjfp0ZBr1KtDRbnfVdmIw"), "",
                                              "", ClientAuth::basic))["Authorization"],
        "Basic czZCaGRSa3F0Mzo3RmpmcDBaQnIxS3REUmJuZlZkbUl3");
}

TEST(GithubInstallationRequestTest, PostsAnAppJwtToTheInstallationsTokenPath) {
    const auto request = github_installation_request("https://api.github.com", "123456", "7890",
                                                     Secret(test::rsa_test_key().pkcs1_pem), now);
    EXPECT_EQ(request.url, "https://api.github.com/app/installations/7890/access_tokens");
    EXPECT_TRUE(request.body.empty());
    auto headers = headers_of(request);
    ASSERT_TRUE(headers["Authorization"].starts_with("Bearer "));
    const std::string jwt = headers["Authorization"].substr(7);
    headers.erase("Authorization");
    EXPECT_EQ(headers, (std::map<std::string, std::string>{{"Accept", "application/vnd.github+json"},
                                                           {"X-GitHub-Api-Version", "2022-11-28"}}));
    EXPECT_TRUE(test::rs256_verifies(jwt, test::rsa_test_key().key.get()));
    EXPECT_EQ(test::jwt_json(jwt, 0), (nlohmann::json{{"alg", "RS256"}, {"typ", "JWT"}}));
    EXPECT_EQ(test::jwt_json(jwt, 1),
              (nlohmann::json{{"iss", "123456"}, {"iat", 1700000000 - 60}, {"exp", 1700000000 + 540}}));
}

TEST(GithubInstallationRequestTest, KeepsTheEnterprisePathAndDropsOneTrailingSlash) {
    const Secret key(test::rsa_test_key().pkcs8_pem);
    EXPECT_EQ(github_installation_request("https://ghe.example.com/api/v3/", "1", "2", key, now).url,
              "https://ghe.example.com/api/v3/app/installations/2/access_tokens");
}

TEST(GithubInstallationRequestTest, RefusesAnInstallationIdThatIsNotANumberAndABadKey) {
    const Secret key(test::rsa_test_key().pkcs8_pem);
    for (const char* id : {"", "12/../../user", "12?x", "1 2"})
        EXPECT_THROW(github_installation_request("https://api.github.com", "1", id, key, now), MintError) << id;
    EXPECT_THROW(github_installation_request("https://api.github.com", "", "2", key, now), MintError);
    EXPECT_THROW(github_installation_request("https://api.github.com", "1", "2", Secret("SECRET"), now), MintError);
}

ServiceAccountKey service_account(std::string key_id) {
    return {"svc@demo.iam.gserviceaccount.com", Secret(test::rsa_test_key().pkcs8_pem),
            "https://oauth2.googleapis.com/token", std::move(key_id)};
}

TEST(JwtBearerRequestTest, ExchangesAnAssertionForTheServiceAccount) {
    const auto request = jwt_bearer_request(
        service_account("0123abcd"),
        {"https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/devstorage.read_only"}, "",
        now);
    EXPECT_EQ(request.url, "https://oauth2.googleapis.com/token");
    EXPECT_EQ(headers_of(request),
              (std::map<std::string, std::string>{{"Accept", "application/json"},
                                                  {"Content-Type", "application/x-www-form-urlencoded"}}));
    const std::string prefix = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";
    const std::string body(request.body.reveal());
    ASSERT_TRUE(body.starts_with(prefix)) << body;
    // A JWT is base64url and dots only: nothing in it needs form encoding.
    const std::string jwt = body.substr(prefix.size());
    EXPECT_TRUE(test::rs256_verifies(jwt, test::rsa_test_key().key.get()));
    EXPECT_EQ(test::jwt_json(jwt, 0), (nlohmann::json{{"alg", "RS256"}, {"kid", "0123abcd"}, {"typ", "JWT"}}));
    EXPECT_EQ(test::jwt_json(jwt, 1), (nlohmann::json{{"iss", "svc@demo.iam.gserviceaccount.com"},
                                                      {"scope",
                                                       "https://www.googleapis.com/auth/cloud-platform "
                                                       "https://www.googleapis.com/auth/devstorage.read_only"},
                                                      {"aud", "https://oauth2.googleapis.com/token"},
                                                      {"iat", 1700000000},
                                                      {"exp", 1700003600}}));
}

TEST(JwtBearerRequestTest, TheOverrideIsBothTheUrlAndTheAudience) {
    const auto request = jwt_bearer_request(service_account(""), {"s"}, "https://sts.example.com/token", now);
    EXPECT_EQ(request.url, "https://sts.example.com/token");
    const std::string body(request.body.reveal());
    const std::string jwt = body.substr(body.find("assertion=") + 10);
    EXPECT_EQ(test::jwt_json(jwt, 0), (nlohmann::json{{"alg", "RS256"}, {"typ", "JWT"}}));
    EXPECT_EQ(test::jwt_json(jwt, 1)["aud"], "https://sts.example.com/token");
    EXPECT_EQ(test::jwt_json(jwt, 1)["scope"], "s");
}

TEST(JwtBearerRequestTest, NoScopesMeansNoScopeClaim) {
    const auto request = jwt_bearer_request(service_account(""), {}, "", now);
    const std::string body(request.body.reveal());
    EXPECT_FALSE(test::jwt_json(body.substr(body.find("assertion=") + 10), 1).contains("scope"));
}

}  // namespace
}  // namespace vaultgate::minting
