#pragma once
// Replicas of the real binary on one real PostgreSQL, a bound origin that
// records what it receives, and the admin and proxy calls the replica tests
// make through them.
#include "harness.hpp"
#include "pg_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vaultgate::test {

using nlohmann::json;

constexpr const char* secret_a = "sk-live-replica-AAAA-first";
constexpr const char* secret_b = "sk-live-replica-BBBB-second";

class ReplicasTest : public ::testing::Test {
protected:
    ReplicasTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          bound_(bound_files_.first, bound_files_.second) {}

    void SetUp() override {
        VAULTGATE_START_PG(pg);
        pg_ = std::move(pg);
        write_config("");
    }

    // The serve config on the database, with `store_lines` ("  key: value\n"
    // each) added to its store section.
    void write_config(const std::string& store_lines) {
        std::string config = serve_config(dir_, pki_, bound_.port(), bound_.port());
        const std::string path_line = "  path: " + dir_.file("vaultgate.db") + "\n";
        config.replace(config.find(path_line), path_line.size(), "  url: " + pg_->url() + "\n" + store_lines);
        config_path_ = dir_.write("vaultgate.yaml", config);
    }

    void TearDown() override {
        for (auto& r : replicas_) {
            r->signal(SIGTERM);
            EXPECT_EQ(r->wait_exit(), 0) << r->stderr_text();
        }
    }

    ServeProcess& start_replica() {
        replicas_.push_back(std::make_unique<ServeProcess>(config_path_));
        auto& r = *replicas_.back();
        r.forbid_in_stderr(secret_a);
        r.forbid_in_stderr(secret_b);
        EXPECT_TRUE(r.started()) << r.stderr_text();
        return r;
    }

    static HttpResult api(ServeProcess& r, const std::string& method, const std::string& path,
                          const json& body = nullptr) {
        return admin_request(r.admin_port(), method, path, serve_admin_token, body.is_null() ? "" : body.dump());
    }

    // A vault with credential KEY bound to api.bound.test, and a session on it.
    std::pair<std::string, json> make_vault_and_session(ServeProcess& r) {
        auto v = api(r, "POST", "/v1/vaults", {{"name", "team"}});
        EXPECT_EQ(v.status, 201) << v.body;
        const auto id = json::parse(v.body)["id"].get<std::string>();
        EXPECT_EQ(api(r, "POST", "/v1/vaults/" + id + "/credentials", {{"name", "KEY"}, {"value", secret_a}}).status,
                  201);
        auto s = api(r, "POST", "/v1/vaults/" + id + "/services",
                     {{"host", "api.bound.test"},
                      {"port", bound_.port()},
                      {"auth_config", {{"type", "api-key"}, {"header", "x-api-key"}, {"key", "KEY"}}}});
        EXPECT_EQ(s.status, 201) << s.body;
        auto session = api(r, "POST", "/v1/sessions", {{"vault_ids", {id}}, {"ttl_seconds", 600}});
        EXPECT_EQ(session.status, 201) << session.body;
        return {id, json::parse(session.body)};
    }

    struct TwoReplicas {
        ServeProcess& a;
        ServeProcess& b;
        std::string vault;
        json session;
    };
    // Replicas A and B, and a vault and session made through A.
    TwoReplicas two_replicas_with_a_session() {
        auto& a = start_replica();
        auto& b = start_replica();
        auto made = make_vault_and_session(a);
        return {a, b, made.first, made.second};
    }

    static std::string proxy_auth(const json& session) {
        const std::string pair = session["id"].get<std::string>() + ":" + session["token"].get<std::string>();
        return "Proxy-Authorization: Basic " + base64_encode(pair, Base64Alphabet::standard, true) + "\r\n";
    }

    // CONNECT through `r` with the session: the status line's code, and the
    // TLS connection when it is 200 and vaultgate intercepts it. Callers poll
    // while a change propagates: a replica that has the session but not yet
    // the service tunnels to the origin, whose certificate the proxy CA does
    // not sign, and that attempt is a null, not a failure.
    std::unique_ptr<RawClient> open_bound(ServeProcess& r, const json& session, std::string* status = nullptr) {
        auto c = std::make_unique<RawClient>(r.proxy_port());
        auto head = c->connect("api.bound.test:" + std::to_string(bound_.port()), proxy_auth(session));
        if (status) *status = head.substr(0, 12);
        if (head.rfind("HTTP/1.1 200", 0) != 0) return nullptr;
        if (!c->start_tls(pki_.proxy_ca_cert, "api.bound.test")) return nullptr;
        return c;
    }

    // Whether `r` comes to refuse the session (407) within `timeout_ms`; the
    // last status line seen goes to `status`.
    bool refuses_eventually(ServeProcess& r, const json& session, std::string& status, int timeout_ms) {
        return eventually(
            [&] {
                open_bound(r, session, &status);
                return status == "HTTP/1.1 407";
            },
            timeout_ms);
    }

    // The x-api-key the origin received for one request through `r`.
    std::string secret_seen_through(ServeProcess& r, const json& session) {
        auto c = open_bound(r, session);
        if (!c) return "";
        c->write("GET /echo HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) +
                 "\r\nx-api-key: placeholder\r\n\r\n");
        if (!c->read_response()) return "";
        const auto requests = bound_.requests();
        if (requests.empty()) return "";
        const auto values = requests.back().header_values("x-api-key");
        return values.empty() ? "" : values.front();
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_;
    RecordingUpstream bound_;
    std::unique_ptr<PgServer> pg_;
    std::string config_path_;
    std::vector<std::unique_ptr<ServeProcess>> replicas_;
};

}  // namespace vaultgate::test
