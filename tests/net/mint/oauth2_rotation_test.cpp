// oauth2-client-credentials through the real binary and its admin API:
// rotating the client secret drops the cached token, so the next request
// fetches a new one with the new secret; /metrics counts per service.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* first_secret = "cs-first-AAAA-1111";
constexpr const char* second_secret = "cs-second-BBBB-2222";
constexpr const char* first_token = "tok-first-minted-0001";

std::string token_json_answer(const std::string& token) {
    const std::string body = R"({"access_token":")" + token + R"(","expires_in":3600})";
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
}

class OAuth2RotationTest : public ::testing::Test {
protected:
    OAuth2RotationTest()
        : pki_(dir_),
          endpoint_files_(pki_.server_files(dir_, "auth.test")),
          origin_files_(pki_.server_files(dir_, "oauth.test")),
          endpoint_(endpoint_files_.first, endpoint_files_.second),
          origin_(origin_files_.first, origin_files_.second) {
        dir_.write("admin.token", std::string(serve_admin_token) + "\n");
        std::string key(32, '\0');
        for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i * 5 + 3);
        dir_.write("master.key", key);
        const auto config = dir_.write(
            "vaultgate.yaml",
            "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
            "ca:\n  cert: " +
                pki_.proxy_ca_cert + "\n  key: " + pki_.proxy_ca_key +
                "\nupstream:\n  ca_file: " + pki_.upstream_ca_cert +
                "\n  resolve:\n    auth.test: 127.0.0.1\n    oauth.test: 127.0.0.1\n"
                "store:\n  path: " +
                dir_.file("vaultgate.db") + "\n  master_key_file: " + dir_.file("master.key") +
                "\nadmin:\n  token_file: " + dir_.file("admin.token") + "\nlog:\n  access: " + dir_.file("access.log") +
                "\n  level: info\n"
                "egress_policies:\n  default:\n    allowed_domains: []\n");
        proc_ = std::make_unique<ServeProcess>(config);
        proc_->forbid_in_stderr(first_secret);
        proc_->forbid_in_stderr(second_secret);
        proc_->forbid_in_stderr(first_token);
    }

    ~OAuth2RotationTest() override {
        proc_->signal(SIGTERM);
        EXPECT_EQ(proc_->wait_exit(), 0) << proc_->stderr_text();
    }

    HttpResult api(const std::string& method, const std::string& path, const json& body = nullptr) {
        return admin_request(proc_->admin_port(), method, path, serve_admin_token, body.is_null() ? "" : body.dump());
    }

    int get(const json& session) {
        RawClient c(proc_->proxy_port());
        const std::string pair = session["id"].get<std::string>() + ":" + session["token"].get<std::string>();
        auto head =
            c.connect("oauth.test:" + std::to_string(origin_.port()),
                      "Proxy-Authorization: Basic " + base64_encode(pair, Base64Alphabet::standard, true) + "\r\n");
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        EXPECT_TRUE(c.start_tls(pki_.proxy_ca_cert, "oauth.test"));
        c.write("GET /echo HTTP/1.1\r\nHost: oauth.test:" + std::to_string(origin_.port()) + "\r\n\r\n");
        auto r = c.read_response();
        return r ? r->status : 0;
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> endpoint_files_, origin_files_;
    RecordingUpstream endpoint_, origin_;
    std::unique_ptr<ServeProcess> proc_;
};

TEST_F(OAuth2RotationTest, RotatingTheClientSecretFetchesANewToken) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto v = api("POST", "/v1/vaults", {{"name", "team-o"}});
    ASSERT_EQ(v.status, 201) << v.body;
    const auto vault = json::parse(v.body)["id"].get<std::string>();
    ASSERT_EQ(api("POST", "/v1/vaults/" + vault + "/credentials", {{"name", "CID"}, {"value", "client-o"}}).status,
              201);
    ASSERT_EQ(
        api("POST", "/v1/vaults/" + vault + "/credentials", {{"name", "CSECRET"}, {"value", first_secret}}).status,
        201);
    auto s = api("POST", "/v1/vaults/" + vault + "/services",
                 {{"host", "oauth.test"},
                  {"port", origin_.port()},
                  {"auth_config",
                   {{"type", "oauth2-client-credentials"},
                    {"token_url", "https://auth.test:" + std::to_string(endpoint_.port()) + "/scripted"},
                    {"client_id", "CID"},
                    {"client_secret", "CSECRET"},
                    {"client_auth", "post"}}}});
    ASSERT_EQ(s.status, 201) << s.body;
    auto sr = api("POST", "/v1/sessions", {{"vault_ids", {vault}}, {"ttl_seconds", 600}});
    ASSERT_EQ(sr.status, 201) << sr.body;
    const auto session = json::parse(sr.body);

    endpoint_.script_response(token_json_answer(first_token));
    EXPECT_EQ(get(session), 200);
    EXPECT_EQ(get(session), 200);
    ASSERT_EQ(endpoint_.requests().size(), 1u);  // the second used the cache
    EXPECT_NE(endpoint_.requests()[0].body.find(std::string("client_secret=") + first_secret), std::string::npos);

    ASSERT_EQ(api("PUT", "/v1/vaults/" + vault + "/credentials/CSECRET", {{"value", second_secret}}).status, 200);
    endpoint_.script_response(token_json_answer("tok-second-minted-0002"));
    EXPECT_EQ(get(session), 200);
    const auto fetches = endpoint_.requests();
    ASSERT_EQ(fetches.size(), 2u);
    EXPECT_NE(fetches[1].body.find(std::string("client_secret=") + second_secret), std::string::npos);
    const auto seen = origin_.requests();
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[1].header_values("authorization"), std::vector<std::string>{std::string("Bearer ") + first_token});
    EXPECT_EQ(seen[2].header_values("authorization"), std::vector<std::string>{"Bearer tok-second-minted-0002"});

    const auto metrics = api("GET", "/metrics").body;
    const std::string labels = "{vault=\"team-o\",service=\"" + json::parse(s.body)["id"].get<std::string>() + "\"}";
    EXPECT_NE(metrics.find("vaultgate_token_fetches_total" + labels + " 2"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("vaultgate_token_cache_hits_total" + labels + " 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("vaultgate_token_fetch_failures_total" + labels + " 0"), std::string::npos) << metrics;
    EXPECT_EQ(metrics.find("tok-"), std::string::npos);
    const auto logs = api("GET", "/v1/logs?limit=10").body;
    EXPECT_NE(logs.find("oauth2-client-credentials"), std::string::npos) << logs;
    EXPECT_EQ(logs.find("tok-"), std::string::npos) << logs;
}

}  // namespace
}  // namespace vaultgate::test
