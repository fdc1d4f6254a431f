// POST /v1/explain against the real binary: the decision, and the addresses
// found as the proxy finds them (upstream.resolve, the resolver, IP literals)
// and judged as it judges them (address class, allowed_cidrs, its own listeners).
#include "serve_process.hpp"
#include "temp_dir.hpp"
#include "test_pki.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* secret = "sk-explain-net-SECRET-4242";

class ExplainEndpointTest : public ::testing::Test {
protected:
    ExplainEndpointTest() : pki_(dir_) {
        dir_.write("admin.token", std::string(serve_admin_token) + "\n");
        dir_.write("master.key", std::string(32, 'm'));
        const std::string config =
            "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
            "ca:\n  cert: " +
            pki_.proxy_ca_cert + "\n  key: " + pki_.proxy_ca_key + "\nupstream:\n  ca_file: " + pki_.upstream_ca_cert +
            "\n  resolve:\n    api.bound.test: 127.0.0.1\n    internal.test: 10.20.30.40\n"
            "store:\n  path: " +
            dir_.file("vaultgate.db") + "\n  master_key_file: " + dir_.file("master.key") +
            "\nadmin:\n  token_file: " + dir_.file("admin.token") + "\nlog:\n  access: " + dir_.file("access.log") +
            "\n"
            "vaults:\n"
            "  - name: team\n"
            "    credentials:\n"
            "      KEY: { env: VG_EXPLAIN_NET_KEY }\n"
            "    services:\n"
            "      - host: api.bound.test\n"
            "        auth: { type: bearer, key: KEY }\n"
            "sessions:\n"
            "  default: { vaults: [team], egress_policy: default }\n"
            "  loopback: { vaults: [], egress_policy: loopback }\n"
            "egress_policies:\n"
            "  default:\n"
            "    allowed_domains: [internal.test, localhost]\n"
            "  loopback:\n"
            "    allowed_cidrs: [127.0.0.1/32]\n";
        proc_ = std::make_unique<ServeProcess>(dir_.write("vaultgate.yaml", config),
                                               std::map<std::string, std::string>{{"VG_EXPLAIN_NET_KEY", secret}});
        proc_->forbid_in_stderr(secret);
    }

    void SetUp() override { ASSERT_TRUE(proc_->started()) << proc_->stderr_text(); }

    void TearDown() override {
        proc_->signal(SIGTERM);
        EXPECT_EQ(proc_->wait_exit(), 0) << proc_->stderr_text();
    }

    HttpResult post(const json& body, const std::string& token = serve_admin_token) {
        auto r = admin_request(proc_->admin_port(), "POST", "/v1/explain", token, body.dump());
        EXPECT_EQ(r.body.find(secret), std::string::npos) << r.body;
        return r;
    }

    json explain(const json& body) {
        auto r = post(body);
        EXPECT_EQ(r.status, 200) << r.body;
        return json::parse(r.body);
    }

    TempDir dir_;
    TestPki pki_;
    std::unique_ptr<ServeProcess> proc_;
};

TEST_F(ExplainEndpointTest, NamePinnedByUpstreamResolveIsTunnelled) {
    const json e = explain({{"url", "https://internal.test/v1/x"}});
    EXPECT_EQ(e["action"], "tunnel") << e.dump();
    EXPECT_TRUE(e["status"].is_null());
    EXPECT_EQ(e["decided_by"], (json{{"key", "allowed_domains"}, {"value", "internal.test"}}));
    EXPECT_EQ(e["session"], "default");
    EXPECT_EQ(e["policy"], "default");
    EXPECT_EQ(e["resolution"]["source"], "upstream.resolve");
    ASSERT_EQ(e["addresses"].size(), 1u) << e.dump();
    const json& a = e["addresses"][0];
    EXPECT_EQ(a["address"], "10.20.30.40");
    EXPECT_EQ(a["class"], "private_network");
    EXPECT_EQ(a["allowed"], true);
    EXPECT_EQ(a["decided_by"], (json{{"key", "upstream.resolve"}, {"value", "internal.test"}}));
}

TEST_F(ExplainEndpointTest, BoundHostShowsTheBindingAndNeverTheSecret) {
    const json e = explain({{"url", "https://api.bound.test/v1/models"}, {"method", "POST"}});
    EXPECT_EQ(e["action"], "mitm") << e.dump();
    EXPECT_EQ(e["request"]["method"], "POST");
    EXPECT_EQ(e["binding"]["vault"], "team");
    EXPECT_EQ(e["binding"]["auth_type"], "bearer");
    EXPECT_EQ(e["binding"]["credential"], "KEY");
    EXPECT_EQ(e["binding"]["credential_set"], true);
    EXPECT_EQ(e["addresses"][0]["address"], "127.0.0.1");
    EXPECT_EQ(e["addresses"][0]["allowed"], true);
}

TEST_F(ExplainEndpointTest, PrivateAddressLiteralIsDenied) {
    const json e = explain({{"url", "https://10.20.30.40:8443/"}});
    EXPECT_EQ(e["action"], "denied") << e.dump();
    EXPECT_EQ(e["status"], 403);
    EXPECT_EQ(e["reason"], "ip_literal_not_allowed");
    EXPECT_EQ(e["decided_by"]["key"], "allowed_cidrs");
    EXPECT_EQ(e["resolution"]["source"], "literal");
    ASSERT_EQ(e["addresses"].size(), 1u);
    EXPECT_EQ(e["addresses"][0]["class"], "private_network");
    EXPECT_EQ(e["addresses"][0]["allowed"], false);
    EXPECT_EQ(e["addresses"][0]["reason"], "private_address");
}

TEST_F(ExplainEndpointTest, NameResolvedByTheResolverToLoopbackIsDenied) {
    const json e = explain({{"url", "https://localhost/"}});
    EXPECT_EQ(e["resolution"]["source"], "dns") << e.dump();
    ASSERT_FALSE(e["addresses"].empty()) << e.dump();
    for (const auto& a : e["addresses"]) {
        EXPECT_EQ(a["class"], "loopback");
        EXPECT_EQ(a["allowed"], false);
    }
    EXPECT_EQ(e["action"], "denied");
    EXPECT_EQ(e["reason"], "loopback_address");
    EXPECT_EQ(e["decided_by"], (json{{"key", "address_class"}, {"value", "loopback"}}));
}

TEST_F(ExplainEndpointTest, OwnListenerIsDeniedEvenWhenAllowedCidrsCoverIt) {
    const std::string admin = "https://127.0.0.1:" + std::to_string(proc_->admin_port()) + "/";
    const json e = explain({{"url", admin}, {"session", "loopback"}});
    EXPECT_EQ(e["session"], "loopback");
    EXPECT_EQ(e["action"], "denied") << e.dump();
    EXPECT_EQ(e["reason"], "self_connection");
    EXPECT_EQ(e["decided_by"]["key"], "listen");

    const json other = explain({{"url", "https://127.0.0.1:9/"}, {"session", "loopback"}});
    EXPECT_EQ(other["action"], "tunnel") << other.dump();
    EXPECT_EQ(other["addresses"][0]["decided_by"], (json{{"key", "allowed_cidrs"}, {"value", "127.0.0.1/32"}}));
}

TEST_F(ExplainEndpointTest, SessionMadeThroughTheApi) {
    auto made = admin_request(proc_->admin_port(), "POST", "/v1/sessions", serve_admin_token,
                              json{{"vault_ids", {"team"}}, {"egress_policy", "default"}}.dump());
    ASSERT_EQ(made.status, 201) << made.body;
    const std::string id = json::parse(made.body)["id"];
    const json e = explain({{"url", "https://api.bound.test/"}, {"session", id}});
    EXPECT_EQ(e["session"], id);
    EXPECT_EQ(e["action"], "mitm");
}

TEST_F(ExplainEndpointTest, Refusals) {
    auto unknown = post({{"url", "https://internal.test/"}, {"session", "ses_unknown"}});
    EXPECT_EQ(unknown.status, 404) << unknown.body;
    EXPECT_EQ(json::parse(unknown.body)["error"]["code"], "session_not_found");
    EXPECT_EQ(post({{"url", "gopher://internal.test/"}}).status, 400);
    EXPECT_EQ(post({{"url", "https://internal.test/"}, {"extra", true}}).status, 400);
    EXPECT_EQ(post({{"url", "https://internal.test/"}}, "wrong-token-wrong-token").status, 401);
    auto get = admin_request(proc_->admin_port(), "GET", "/v1/explain", serve_admin_token);
    EXPECT_EQ(get.status, 405);
    EXPECT_NE(get.head.find("Allow: POST"), std::string::npos) << get.head;
}

}  // namespace
}  // namespace vaultgate::test
