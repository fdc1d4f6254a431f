// Which bound service a request on an intercepted host gets, end to end: paths
// an origin may read as another one never carry the credential of a narrower
// path_prefix, the most specific of overlapping bindings injects its own
// credential, and the admin API refuses bindings that tie.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* narrow_secret = "sk-narrow-v1-0123456789";
constexpr const char* broad_secret = "sk-broad-root-9876543210";
constexpr const char* wild_secret = "sk-wild-deep-5555555555";

class PathBindingTest : public ::testing::Test {
protected:
    PathBindingTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          bound_(bound_files_.first, bound_files_.second) {}

    void TearDown() override {
        const std::string log = stop_and_read_access_log(proxy_);
        for (const char* secret : {narrow_secret, broad_secret, wild_secret})
            EXPECT_EQ(log.find(secret), std::string::npos);
    }

    // A vault of one credential bound to `host` on the upstream's port under `prefix`.
    std::string vault(const std::string& name, const std::string& secret, const std::string& host,
                      const std::string& prefix) const {
        const auto file = dir_.write(name + ".key", secret + "\n");
        return "  - name: " + name + "\n    credentials:\n      KEY: { file: " + file + " }\n" +
               "    services:\n      - host: \"" + host + "\"\n        port: " + std::to_string(bound_.port()) +
               "\n        path_prefix: " + prefix + "\n        auth: { type: api-key, header: x-api-key, key: KEY }\n";
    }

    void start_proxy(const std::string& vaults_yaml, const std::string& session_vaults) {
        const std::string yaml =
            "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
            "ca:\n  cert: " +
            pki_.proxy_ca_cert + "\n  key: " + pki_.proxy_ca_key +
            "\n"
            "upstream:\n  ca_file: " +
            pki_.upstream_ca_cert +
            "\n  resolve:\n    api.bound.test: 127.0.0.1\n"
            "store:\n  path: " +
            dir_.file("vaultgate.db") +
            "\n"
            "log:\n  access: " +
            dir_.file("access.log") +
            "\n  level: warn\n"
            "limits:\n  handshake_timeout: 3s\n  header_timeout: 3s\n  idle_timeout: 10s\n"
            "vaults:\n" +
            vaults_yaml + "sessions:\n  default: { vaults: [" + session_vaults +
            "], egress_policy: test }\n"
            "egress_policies:\n  test:\n    allow_https: true\n";
        proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    }

    std::unique_ptr<RawClient> open_bound() {
        auto c = std::make_unique<RawClient>(proxy_->port());
        const auto head = c->connect("api.bound.test:" + std::to_string(bound_.port()));
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        std::string err;
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test", &err)) << err;
        return c;
    }

    // GET `path` on a connection of its own (a refusal closes it).
    std::optional<RawClient::Response> get(const std::string& path) {
        auto c = open_bound();
        c->write("GET " + path + " HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) +
                 "\r\nx-api-key: placeholder\r\n\r\n");
        return c->read_response();
    }

    // The x-api-key the origin got with the request for `target`.
    std::vector<std::string> key_received_for(const std::string& target) const {
        for (const auto& r : bound_.requests())
            if (r.target == target) return r.header_values("x-api-key");
        return {"(no request)"};
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_;
    RecordingUpstream bound_;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

// Each is read by some origin (Tomcat, Spring, nginx, Go, a lax UTF-8 or
// double decoder) as a path outside /v1/.
const char* const bypass_paths[] = {
    "/v1/..;/admin",          "/v1/..;jsessionid=1/admin",
    "/v1/%2e%2e%3b/admin",    "/v1/%252e%252e/admin",
    "/v1/%c0%ae%c0%ae/admin", "/v1/..%00/admin",
    "/v1/..%20/admin",        "/v1/%2E%2E/admin",
    "/v1/..%2fadmin",         "/v1/..\\admin",
    "/v1/../admin",           "/v1/.../admin",
};

TEST_F(PathBindingTest, APathAnOriginMayReadOutsideThePrefixNeverGetsTheCredential) {
    start_proxy(vault("narrow", narrow_secret, "api.bound.test", "/v1/"), "narrow");
    for (const char* path : bypass_paths) {
        SCOPED_TRACE(path);
        const auto r = get(path);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 403);
        EXPECT_NE(r->head.find("X-Vaultgate-Reason: path_not_covered"), std::string::npos) << r->head;
    }
    // A fragment is never valid in a request target.
    for (const char* path : {"/v1#/../admin", "/v1/ok#x"}) {
        SCOPED_TRACE(path);
        const auto r = get(path);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400);
    }
    // None of them reached the origin, let alone with the secret.
    EXPECT_TRUE(bound_.requests().empty());
    EXPECT_EQ(bound_.raw().find(narrow_secret), std::string::npos);
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"path_not_covered\""));

    // Plain paths: inside the prefix injected, outside it forwarded without the credential.
    for (const char* path : {"/v1/ok", "/v1/a%20b", "/v1/%41", "/other"}) {
        const auto r = get(path);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 200) << path;
    }
    EXPECT_EQ(key_received_for("/v1/ok"), std::vector<std::string>{narrow_secret});
    EXPECT_EQ(key_received_for("/v1/a%20b"), std::vector<std::string>{narrow_secret});
    EXPECT_EQ(key_received_for("/v1/%41"), std::vector<std::string>{narrow_secret});
    EXPECT_EQ(key_received_for("/other"), std::vector<std::string>{"placeholder"});
}

TEST_F(PathBindingTest, AFragmentIsRefusedOnThePlainHttpPathToo) {
    start_proxy(vault("narrow", narrow_secret, "api.bound.test", "/v1/"), "narrow");
    RawClient c(proxy_->port());
    const auto head =
        c.send_plain("GET http://api.bound.test:" + std::to_string(bound_.port()) +
                     "/v1#/../admin HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) + "\r\n\r\n");
    EXPECT_EQ(head.rfind("HTTP/1.1 400", 0), 0u) << head;
    EXPECT_EQ(bound_.connections(), 0u);
}

// Three vaults bind api.bound.test, listed so that the first one that covers
// the path is never the most specific: an exact host beats a wildcard, then
// the longer path_prefix wins.
TEST_F(PathBindingTest, TheMostSpecificOfOverlappingBindingsInjectsItsOwnCredential) {
    start_proxy(vault("wild", wild_secret, "*.bound.test", "/v1/deep/") +
                    vault("broad", broad_secret, "api.bound.test", "/") +
                    vault("narrow", narrow_secret, "api.bound.test", "/v1/"),
                "wild, broad, narrow");
    for (const char* path : {"/v1/x", "/v1/deep/x", "/other", "/v1/..;/admin"}) {
        const auto r = get(path);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 200) << path;
    }
    EXPECT_EQ(key_received_for("/v1/x"), std::vector<std::string>{narrow_secret});
    EXPECT_EQ(key_received_for("/v1/deep/x"), std::vector<std::string>{narrow_secret});  // exact host first
    EXPECT_EQ(key_received_for("/other"), std::vector<std::string>{broad_secret});
    // Only "/" covers a path an origin may resolve elsewhere; its credential is for every path.
    EXPECT_EQ(key_received_for("/v1/..;/admin"), std::vector<std::string>{broad_secret});
}

TEST_F(PathBindingTest, AConfigSessionWhoseVaultsTieIsAConfigError) {
    const std::string vaults =
        vault("one", broad_secret, "api.bound.test", "/v1/") + vault("two", narrow_secret, "api.bound.test", "/v1/");
    EXPECT_THROW(start_proxy(vaults, "one, two"), ConfigError);
    start_proxy(vaults, "two");  // apart they are fine
}

// The admin API, through the real binary: a session whose vaults tie, or a
// service that would make a live session's vaults tie, is refused with 409.
TEST_F(PathBindingTest, TheAdminApiRefusesTiedBindingsWith409) {
    const std::string config = dir_.write("vaultgate.yaml", serve_config(dir_, pki_, bound_.port(), free_port()));
    ServeProcess proc(config);
    proc.forbid_in_stderr(narrow_secret);
    ASSERT_TRUE(proc.started()) << proc.stderr_text();
    auto api = [&](const std::string& method, const std::string& path, const json& body) {
        auto r = admin_request(proc.admin_port(), method, path, serve_admin_token, body.is_null() ? "" : body.dump());
        EXPECT_EQ(r.body.find(narrow_secret), std::string::npos);
        return r;
    };
    auto v = api("POST", "/v1/vaults", {{"name", "team"}});
    ASSERT_EQ(v.status, 201) << v.body;
    const std::string id = json::parse(v.body)["id"];
    ASSERT_EQ(api("POST", "/v1/vaults/" + id + "/credentials", {{"name", "KEY"}, {"value", narrow_secret}}).status,
              201);
    const json same_as_bench = {
        {"host", "api.bound.test"}, {"port", bound_.port()}, {"auth_config", {{"type", "api-key"}, {"key", "KEY"}}}};
    ASSERT_EQ(api("POST", "/v1/vaults/" + id + "/services", same_as_bench).status, 201);

    // The config vault "bench" binds the same host, port and path_prefix "/".
    auto s = api("POST", "/v1/sessions", {{"vault_ids", {id, "bench"}}});
    EXPECT_EQ(s.status, 409) << s.body;
    EXPECT_EQ(json::parse(s.body)["error"]["code"], "binding_conflict") << s.body;

    // A second vault in a live session with "team" may not bind what "team" binds.
    auto w = api("POST", "/v1/vaults", {{"name", "other"}});
    ASSERT_EQ(w.status, 201) << w.body;
    const std::string other = json::parse(w.body)["id"];
    ASSERT_EQ(
        api("POST", "/v1/vaults/" + other + "/credentials", {{"name", "KEY"}, {"value", "sk-other-value"}}).status,
        201);
    ASSERT_EQ(api("POST", "/v1/sessions", {{"vault_ids", {id, other}}}).status, 201);
    auto added = api("POST", "/v1/vaults/" + other + "/services", same_as_bench);
    EXPECT_EQ(added.status, 409) << added.body;
    EXPECT_EQ(json::parse(added.body)["error"]["code"], "binding_conflict") << added.body;

    proc.signal(SIGTERM);
    EXPECT_EQ(proc.wait_exit(), 0) << proc.stderr_text();
}

}  // namespace
}  // namespace vaultgate::test
