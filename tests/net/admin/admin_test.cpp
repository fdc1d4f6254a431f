// The operator's side, through the real binary: the admin API over HTTP,
// sessions with tokens on the proxy, rotation on a live connection, deletion and
// expiry closing connections, persistence across restarts, and store errors.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* admin_token = "test-admin-token-0123456789abcdef";
constexpr const char* secret_a = "sk-live-AAAA-1111-first-value";
constexpr const char* secret_b = "sk-live-BBBB-2222-second-value";

class AdminTest : public ::testing::Test {
protected:
    AdminTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          bound_(bound_files_.first, bound_files_.second) {
        dir_.write("admin.token", std::string(admin_token) + "\n");
        std::string key(32, '\0');
        for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i * 7 + 1);
        dir_.write("master.key", key);
        config_path_ = dir_.write("vaultgate.yaml", config_yaml());
    }

    std::string config_yaml(const std::string& extra = "") const {
        return "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
               "ca:\n  cert: " +
               pki_.proxy_ca_cert + "\n  key: " + pki_.proxy_ca_key +
               "\n"
               "upstream:\n  ca_file: " +
               pki_.upstream_ca_cert +
               "\n  resolve:\n    api.bound.test: 127.0.0.1\n"
               "store:\n  path: " +
               dir_.file("vaultgate.db") + "\n  master_key_file: " + dir_.file("master.key") +
               "\n"
               "admin:\n  token_file: " +
               dir_.file("admin.token") +
               "\n"
               "log:\n  access: " +
               dir_.file("access.log") +
               "\n  level: info\n"
               "egress_policies:\n  default:\n    allowed_domains: []\n" +
               extra;
    }

    void start() {
        proc_ = std::make_unique<ServeProcess>(config_path_);
        proc_->forbid_in_stderr(secret_a);
        proc_->forbid_in_stderr(secret_b);
        ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    }

    void TearDown() override {
        if (proc_) {
            proc_->signal(SIGTERM);
            EXPECT_EQ(proc_->wait_exit(), 0) << proc_->stderr_text();
            auto err = proc_->stderr_text();
            EXPECT_EQ(err.find(secret_a), std::string::npos) << err;
            EXPECT_EQ(err.find(secret_b), std::string::npos) << err;
        }
        std::ifstream log(dir_.file("access.log"));
        std::stringstream ss;
        ss << log.rdbuf();
        EXPECT_EQ(ss.str().find(secret_a), std::string::npos);
        EXPECT_EQ(ss.str().find(secret_b), std::string::npos);
    }

    long gauge(const std::string& name);
    std::pair<long, long> watch_block_cache_fill_and_drain(std::chrono::seconds limit);

    HttpResult api(const std::string& method, const std::string& path, const json& body = nullptr) {
        auto r = admin_request(proc_->admin_port(), method, path, admin_token, body.is_null() ? "" : body.dump());
        bodies_.push_back(r.head + r.body);
        return r;
    }

    // Creates a vault with one credential bound to api.bound.test; returns its id.
    std::string make_vault(const std::string& name, const std::string& secret) {
        auto v = api("POST", "/v1/vaults", {{"name", name}});
        EXPECT_EQ(v.status, 201) << v.body;
        auto id = json::parse(v.body)["id"].get<std::string>();
        auto c = api("POST", "/v1/vaults/" + id + "/credentials", {{"name", "KEY"}, {"value", secret}});
        EXPECT_EQ(c.status, 201) << c.body;
        auto s = api("POST", "/v1/vaults/" + id + "/services",
                     {{"host", "api.bound.test"},
                      {"port", bound_.port()},
                      {"auth_config", {{"type", "api-key"}, {"header", "x-api-key"}, {"key", "KEY"}}}});
        EXPECT_EQ(s.status, 201) << s.body;
        return id;
    }

    json make_session(const std::string& vault_id, int ttl = 600) {
        auto r = api("POST", "/v1/sessions", {{"vault_ids", {vault_id}}, {"ttl_seconds", ttl}});
        EXPECT_EQ(r.status, 201) << r.body;
        return json::parse(r.body);
    }

    std::string proxy_auth(const json& session) const {
        const std::string pair = session["id"].get<std::string>() + ":" + session["token"].get<std::string>();
        return "Proxy-Authorization: Basic " + base64_encode(pair, Base64Alphabet::standard, true) + "\r\n";
    }

    std::unique_ptr<RawClient> open_bound(const json& session) {
        auto c = std::make_unique<RawClient>(proc_->proxy_port());
        auto head = c->connect("api.bound.test:" + std::to_string(bound_.port()), proxy_auth(session));
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test"));
        return c;
    }

    std::string get_echo() const {
        return "GET /echo HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) +
               "\r\nx-api-key: placeholder\r\n\r\n";
    }

    // An access-log entry is written when the exchange ends, which can be just after
    // the client has its answer; poll /v1/logs until an entry shows up or time runs out.
    json wait_for_log_entries(const std::string& query, int timeout_ms = 5000) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        for (;;) {
            auto r = api("GET", "/v1/logs?" + query);
            EXPECT_EQ(r.status, 200) << r.body;
            auto entries = json::parse(r.body)["entries"];
            if (!entries.empty() || std::chrono::steady_clock::now() >= deadline) return entries;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    void expect_no_secret_in_any_response() const {
        for (const auto& b : bodies_) {
            EXPECT_EQ(b.find(secret_a), std::string::npos) << b;
            EXPECT_EQ(b.find(secret_b), std::string::npos) << b;
        }
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_;
    RecordingUpstream bound_;
    std::string config_path_;
    std::unique_ptr<ServeProcess> proc_;
    std::vector<std::string> bodies_;
};

TEST_F(AdminTest, TokenIsRequiredExceptForHealthz) {
    start();
    EXPECT_EQ(admin_request(proc_->admin_port(), "GET", "/v1/vaults", "").status, 401);
    EXPECT_EQ(admin_request(proc_->admin_port(), "GET", "/v1/vaults", "wrong-token-wrong-token").status, 401);
    EXPECT_EQ(admin_request(proc_->admin_port(), "GET", "/metrics", "").status, 401);
    auto h = admin_request(proc_->admin_port(), "GET", "/healthz", "");
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(json::parse(h.body)["status"], "ok");
    EXPECT_EQ(api("GET", "/v1/vaults").status, 200);
}

TEST_F(AdminTest, SessionTokenOnTheProxyInjectsTheVaultsSecret) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto session = make_session(vault);
    EXPECT_NE(session["proxy_url"].get<std::string>().find(session["token"].get<std::string>()), std::string::npos);
    auto c = open_bound(session);
    c->write(get_echo());
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{secret_a});
    EXPECT_TRUE(reqs[0].header_values("proxy-authorization").empty());

    // Metadata is visible, the value never is.
    auto shown = api("GET", "/v1/vaults/" + vault);
    auto creds = json::parse(shown.body)["credentials"];
    ASSERT_EQ(creds.size(), 1u);
    EXPECT_EQ(creds[0]["version"], 1);
    EXPECT_TRUE(creds[0].contains("fingerprint"));
    EXPECT_FALSE(wait_for_log_entries("vault=team-a").empty());
    auto metrics = api("GET", "/metrics");
    EXPECT_NE(metrics.body.find("vaultgate_injections_total{vault=\"team-a\""), std::string::npos) << metrics.body;
    // What the server's other parts count is there too.
    EXPECT_NE(metrics.body.find("\nvaultgate_access_log_dropped_lines_total 0\n"), std::string::npos) << metrics.body;
    EXPECT_NE(metrics.body.find("\nvaultgate_upstream_pooled_connections "), std::string::npos) << metrics.body;
    expect_no_secret_in_any_response();
}

// The value of a gauge in /metrics, -1 when it is missing.
long AdminTest::gauge(const std::string& name) {
    const std::string body = api("GET", "/metrics").body;
    const std::string line_start = "\n" + name + " ";
    const auto at = body.find(line_start);
    return at == std::string::npos ? -1L : std::stol(body.substr(at + line_start.size()));
}

// Polls vaultgate_block_cache_bytes until it has been seen above zero and
// then at zero again (blocks are held at least 0.5 s, then freed by the
// once-a-second tick). Returns {highest seen, last seen}.
std::pair<long, long> AdminTest::watch_block_cache_fill_and_drain(std::chrono::seconds limit) {
    long seen_max = 0, last = -1;
    eventually(
        [&] {
            last = gauge("vaultgate_block_cache_bytes");
            seen_max = std::max(seen_max, last);
            return last < 0 || (seen_max > 0 && last == 0);
        },
        static_cast<int>(std::chrono::milliseconds(limit).count()));
    return {seen_max, last};
}

TEST_F(AdminTest, BuffersKeptForNewConnectionsAreFreedOnceTheGatewayIsQuiet) {
    start();
    auto session = make_session(make_vault("team-a", secret_a));
    for (int i = 0; i < 3; ++i) {
        auto c = open_bound(session);
        c->write(get_echo());
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }  // closed: the proxy frees each connection's TLS buffers into its thread's cache
    auto [seen_max, last] = watch_block_cache_fill_and_drain(std::chrono::seconds(10));
    EXPECT_GT(seen_max, 0);
    EXPECT_EQ(last, 0);
}

TEST_F(AdminTest, MemoryGivenBackByQuietConnectionsIsNotKeptForNewOnes) {
    config_path_ = dir_.write("vaultgate.yaml", config_yaml("limits:\n  upstream_idle_timeout: 3s\n"));
    start();
    auto session = make_session(make_vault("team-a", secret_a));
    auto c = open_bound(session);
    auto get_one = [&c, this] {
        c->write(get_echo());
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    };
    get_one();
    // What the handshake freed is kept for new connections, then freed.
    auto drained = watch_block_cache_fill_and_drain(std::chrono::seconds(10));
    ASSERT_EQ(drained.second, 0);
    get_one();
    // Now the client stays connected and quiet: 0.5 s after its last byte it
    // sheds its buffers, and 3 s after its last use the pool's sweep closes
    // its upstream connection. Neither is churn that a new connection will
    // reuse, so none of it is kept: vaultgate_block_cache_bytes stays 0 (kept
    // blocks would show there for at least 0.5 s).
    long seen_max = 0;
    bool upstream_closed = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    auto stop_at = deadline;
    while (std::chrono::steady_clock::now() < stop_at) {
        const long held = gauge("vaultgate_block_cache_bytes");
        ASSERT_GE(held, 0);
        seen_max = std::max(seen_max, held);
        if (!upstream_closed && gauge("vaultgate_upstream_pooled_connections") == 0) {
            upstream_closed = true;
            stop_at = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(upstream_closed);
    EXPECT_EQ(seen_max, 0);
    get_one();  // the quiet connection still works: its buffers come back
}

TEST_F(AdminTest, MissingOrWrongProxyAuthorizationGets407) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto session = make_session(vault);
    for (const std::string& header :
         {std::string(),
          "Proxy-Authorization: Basic " +
              base64_encode(session["id"].get<std::string>() + ":nope", Base64Alphabet::standard, true) + "\r\n",
          std::string("Proxy-Authorization: Basic !!!\r\n")}) {
        RawClient c(proc_->proxy_port());
        auto head = c.connect("api.bound.test:" + std::to_string(bound_.port()), header);
        EXPECT_EQ(head.rfind("HTTP/1.1 407", 0), 0u) << head;
        EXPECT_NE(head.find("Proxy-Authenticate: Basic"), std::string::npos) << head;
    }
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(AdminTest, RotationAppliesToTheNextRequestOnAnOpenConnection) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto session = make_session(vault);
    auto c = open_bound(session);
    c->write(get_echo());
    ASSERT_TRUE(c->read_response());
    auto rot = api("PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}});
    EXPECT_EQ(rot.status, 200) << rot.body;
    EXPECT_EQ(json::parse(rot.body)["version"], 2);
    c->write(get_echo());
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->closed);
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{secret_a});
    EXPECT_EQ(reqs[1].header_values("x-api-key"), std::vector<std::string>{secret_b});
    expect_no_secret_in_any_response();
}

// The redaction tables are part of the published state: a rotation publishes
// tables of the new value, so what the origin reflects after it is redacted.
TEST_F(AdminTest, RotationThroughTheAdminApiRedactsTheNewValue) {
    start();
    auto v = api("POST", "/v1/vaults", {{"name", "team-a"}});
    ASSERT_EQ(v.status, 201) << v.body;
    const auto vault = json::parse(v.body)["id"].get<std::string>();
    EXPECT_EQ(api("POST", "/v1/vaults/" + vault + "/credentials", {{"name", "KEY"}, {"value", secret_a}}).status, 201);
    auto s = api("POST", "/v1/vaults/" + vault + "/services",
                 {{"host", "api.bound.test"},
                  {"port", bound_.port()},
                  {"redact_response", true},
                  {"auth_config", {{"type", "api-key"}, {"header", "x-api-key"}, {"key", "KEY"}}}});
    ASSERT_EQ(s.status, 201) << s.body;
    auto c = open_bound(make_session(vault));
    const std::string reflect =
        "GET /reflect HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) + "\r\n\r\n";
    c->write(reflect);
    auto before = c->read_response();
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, 200);
    EXPECT_NE(before->body.find("raw=vaultgate-placeholder-KEY "), std::string::npos) << before->body;

    auto rot = api("PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}});
    ASSERT_EQ(rot.status, 200) << rot.body;
    c->write(reflect);
    auto after = c->read_response();
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200);
    EXPECT_EQ((after->head + after->body).find(secret_b), std::string::npos) << after->head << after->body;
    EXPECT_NE(after->body.find("raw=vaultgate-placeholder-KEY "), std::string::npos) << after->body;
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[1].header_values("x-api-key"), std::vector<std::string>{secret_b});
    expect_no_secret_in_any_response();
}

TEST_F(AdminTest, OneSessionNeverUsesAnotherSessionsVault) {
    start();
    auto vault_a = make_vault("team-a", secret_a);
    auto vault_b = make_vault("team-b", secret_b);
    auto session_a = make_session(vault_a);
    auto session_b = make_session(vault_b);
    for (const auto& s : {session_a, session_b}) {
        auto c = open_bound(s);
        c->write(get_echo());
        ASSERT_TRUE(c->read_response());
    }
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{secret_a});
    EXPECT_EQ(reqs[1].header_values("x-api-key"), std::vector<std::string>{secret_b});
    // Two client connections, two upstream connections: never shared.
    EXPECT_EQ(bound_.connections(), 2u);
}

TEST_F(AdminTest, DeletingASessionClosesItsConnectionsAndRefusesItsToken) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto session = make_session(vault);
    auto c = open_bound(session);
    c->write(get_echo());
    ASSERT_TRUE(c->read_response());
    EXPECT_EQ(api("DELETE", "/v1/sessions/" + session["id"].get<std::string>()).status, 204);
    EXPECT_TRUE(c->closed_by_peer(5000));
    RawClient again(proc_->proxy_port());
    auto head = again.connect("api.bound.test:" + std::to_string(bound_.port()), proxy_auth(session));
    EXPECT_EQ(head.rfind("HTTP/1.1 407", 0), 0u) << head;
}

TEST_F(AdminTest, ExpiredSessionIsClosedAndRefused) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto session = make_session(vault, 1);
    auto c = open_bound(session);
    // The sweep runs every second; the connection must be closed within a few.
    EXPECT_TRUE(c->closed_by_peer(6000));
    RawClient again(proc_->proxy_port());
    auto head = again.connect("api.bound.test:" + std::to_string(bound_.port()), proxy_auth(session));
    EXPECT_EQ(head.rfind("HTTP/1.1 407", 0), 0u) << head;
}

TEST_F(AdminTest, SessionPinnedToAnotherSourceIsRefused) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto pinned = api("POST", "/v1/sessions", {{"vault_ids", {vault}}, {"source", "10.99.0.0/16"}});
    ASSERT_EQ(pinned.status, 201) << pinned.body;
    auto here = api("POST", "/v1/sessions", {{"vault_ids", {vault}}, {"source", "127.0.0.0/8"}});
    ASSERT_EQ(here.status, 201) << here.body;
    RawClient c(proc_->proxy_port());
    auto head = c.connect("api.bound.test:" + std::to_string(bound_.port()), proxy_auth(json::parse(pinned.body)));
    EXPECT_EQ(head.rfind("HTTP/1.1 407", 0), 0u) << head;
    RawClient ok(proc_->proxy_port());
    head = ok.connect("api.bound.test:" + std::to_string(bound_.port()), proxy_auth(json::parse(here.body)));
    EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
}

// The server and the CLI read one token file by one rule: whitespace around
// the token is not part of it, for either of them.
TEST_F(AdminTest, ServerAndCliAgreeOnATokenFileWithWhitespaceAroundTheToken) {
    dir_.write("admin.token", std::string("  ") + admin_token + "\r\n");
    start();
    auto r = admin_request(proc_->admin_port(), "GET", "/v1/vaults", admin_token, "");
    EXPECT_EQ(r.status, 200) << r.body;
    auto listed = run_command(
        {VAULTGATE_BINARY, "vault", "list", "--admin", "http://127.0.0.1:" + std::to_string(proc_->admin_port()),
         "--token-file", dir_.file("admin.token")},
        "");
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
}

TEST_F(AdminTest, CliManagesVaultsWithSecretsFromStdinOnly) {
    start();
    auto admin = "http://127.0.0.1:" + std::to_string(proc_->admin_port());
    std::vector<std::string> base = {VAULTGATE_BINARY, "vault"};
    auto cli = [&](std::vector<std::string> args, const std::string& input = "") {
        std::vector<std::string> argv = {VAULTGATE_BINARY};
        argv.insert(argv.end(), args.begin(), args.end());
        argv.insert(argv.end(), {"--admin", admin, "--token-file", dir_.file("admin.token")});
        return run_command(argv, input);
    };
    auto created = cli({"vault", "create", "cli-vault", "--json"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    auto id = json::parse(created.out)["id"].get<std::string>();
    auto added = cli({"vault", "add-credential", id, "KEY"}, std::string(secret_a) + "\n");
    EXPECT_EQ(added.exit_code, 0) << added.err;
    // A value on the command line is refused: argv is visible to every process.
    auto argv_value = cli({"vault", "add-credential", id, "OTHER", "--value", secret_b});
    EXPECT_NE(argv_value.exit_code, 0);
    // Bytes that are not UTF-8 cannot travel in JSON; the value is refused, never altered.
    auto binary_value = cli({"vault", "add-credential", id, "BINARY"}, "sk-\xff\xfe-bytes\n");
    EXPECT_NE(binary_value.exit_code, 0);
    EXPECT_NE(binary_value.err.find("UTF-8"), std::string::npos) << binary_value.err;
    auto service = cli({"vault", "add-service", id, "--host", "api.bound.test", "--port", std::to_string(bound_.port()),
                        "--auth", "api-key", "--key", "KEY"});
    EXPECT_EQ(service.exit_code, 0) << service.err;
    auto shown = cli({"vault", "show", id});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_NE(shown.out.find("KEY"), std::string::npos) << shown.out;
    for (const auto& r : {created, added, argv_value, service, shown}) {
        EXPECT_EQ((r.out + r.err).find(secret_a), std::string::npos);
        EXPECT_EQ((r.out + r.err).find(secret_b), std::string::npos);
    }
    auto session = cli({"session", "create", "--vault", id, "--json"});
    ASSERT_EQ(session.exit_code, 0) << session.err;
    auto c = open_bound(json::parse(session.out));
    c->write(get_echo());
    ASSERT_TRUE(c->read_response());
    ASSERT_EQ(bound_.requests().size(), 1u);
    EXPECT_EQ(bound_.requests()[0].header_values("x-api-key"), std::vector<std::string>{secret_a});
}

TEST_F(AdminTest, VaultsAndSessionsSurviveARestart) {
    start();
    auto vault = make_vault("team-a", secret_a);
    auto session = make_session(vault);
    proc_->signal(SIGTERM);
    ASSERT_EQ(proc_->wait_exit(), 0);
    start();
    auto shown = api("GET", "/v1/vaults/" + vault);
    EXPECT_EQ(shown.status, 200) << shown.body;
    auto c = open_bound(session);
    c->write(get_echo());
    ASSERT_TRUE(c->read_response());
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{secret_a});
    // The store on disk holds no secret bytes.
    std::ifstream db(dir_.file("vaultgate.db"), std::ios::binary);
    std::stringstream ss;
    ss << db.rdbuf();
    EXPECT_EQ(ss.str().find(secret_a), std::string::npos);
}

TEST_F(AdminTest, WrongMasterKeyIsAClearStartupError) {
    start();
    make_vault("team-a", secret_a);
    proc_->signal(SIGTERM);
    ASSERT_EQ(proc_->wait_exit(), 0);
    proc_.reset();
    dir_.write("master.key", std::string(32, 'x'));
    ServeProcess bad(config_path_);
    EXPECT_FALSE(bad.started());
    EXPECT_EQ(bad.wait_exit(), 1);
    EXPECT_NE(bad.stderr_text().find("master key"), std::string::npos) << bad.stderr_text();
}

TEST_F(AdminTest, DamagedStoreIsAClearStartupError) {
    start();
    make_vault("team-a", secret_a);
    proc_->signal(SIGTERM);
    ASSERT_EQ(proc_->wait_exit(), 0);
    proc_.reset();
    {
        // Flip every bit of one ciphertext byte (a fixed value might already be there).
        std::fstream f(dir_.file("vaultgate.db"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(40);
        char c = 0;
        f.get(c);
        f.seekp(40);
        f.put(static_cast<char>(c ^ 0xff));
    }
    ServeProcess bad(config_path_);
    EXPECT_FALSE(bad.started());
    EXPECT_EQ(bad.wait_exit(), 1);
    EXPECT_NE(bad.stderr_text().find("vaultgate.db"), std::string::npos) << bad.stderr_text();
}

// An older copy of the store put back (a backup or a snapshot restored) would
// bring back a revoked session; serve refuses it unless told to accept it.
TEST_F(AdminTest, AnOlderCopyOfTheStoreIsRefusedUnlessRollbackIsAllowed) {
    start();
    const auto session = make_session(make_vault("team-a", secret_a));  // generations 1-4
    const auto session_path = "/v1/sessions/" + session["id"].get<std::string>();
    const auto store_path = dir_.file("vaultgate.db");
    // The store is the snapshot and its journal: a copy is of both.
    const auto read = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    const std::string old_copy = read(store_path);
    const std::string old_journal = read(store_path + ".journal");
    ASSERT_FALSE(old_copy.empty());
    ASSERT_FALSE(old_journal.empty());
    EXPECT_EQ(api("DELETE", session_path).status, 204);  // generation 5
    proc_->signal(SIGTERM);
    ASSERT_EQ(proc_->wait_exit(), 0);
    proc_.reset();
    dir_.write("vaultgate.db", old_copy);
    dir_.write("vaultgate.db.journal", old_journal);

    {
        ServeProcess refused(config_path_);
        EXPECT_FALSE(refused.started());
        EXPECT_EQ(refused.wait_exit(), 1);
        const auto err = refused.stderr_text();
        EXPECT_NE(err.find(store_path + ": the store is at generation 4, older than generation 5 last seen (" +
                           store_path + ".generation)"),
                  std::string::npos)
            << err;
        EXPECT_NE(err.find("--allow-rollback"), std::string::npos) << err;
    }

    proc_ = std::make_unique<ServeProcess>(
        config_path_, std::map<std::string, std::string>{}, 0,
        std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" serve --config \"$1\" --allow-rollback"});
    proc_->forbid_in_stderr(secret_a);
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    // The old copy is in force: the session deleted after it was taken is back.
    EXPECT_EQ(api("DELETE", session_path).status, 204);
    proc_->signal(SIGTERM);
    ASSERT_EQ(proc_->wait_exit(), 0);
    proc_.reset();
    // Its generation was recorded, so a plain start accepts the store again.
    start();
}

TEST_F(AdminTest, AShortTokenFileStopsTheStartWithoutShowingTheToken) {
    dir_.write("admin.token", "short-tok3n\n");
    ServeProcess bad(config_path_);
    bad.forbid_in_stderr("short-tok3n");
    EXPECT_FALSE(bad.started());
    EXPECT_EQ(bad.wait_exit(), 2);
    const auto err = bad.stderr_text();
    EXPECT_NE(err.find("admin.token_file " + dir_.file("admin.token") + " must hold a token of at least 16"),
              std::string::npos)
        << err;
}

// The lifecycle over real HTTP: a session made by vault name, listed without
// its token, and the vault it uses deleted only once the session is gone.
TEST_F(AdminTest, SessionsAreListedAndAVaultIsDeletedOnceUnused) {
    start();
    const std::string vault = make_vault("team-a", secret_a);
    auto made = api("POST", "/v1/sessions", {{"vault_ids", {"team-a"}}, {"ttl_seconds", 600}});
    ASSERT_EQ(made.status, 201) << made.body;
    const json session = json::parse(made.body);
    const std::string id = session["id"];
    auto c = open_bound(session);
    c->write(get_echo());
    ASSERT_TRUE(c->read_response());
    EXPECT_EQ(bound_.requests().at(0).header_values("x-api-key"), std::vector<std::string>{secret_a});

    auto list = api("GET", "/v1/sessions");
    ASSERT_EQ(list.status, 200) << list.body;
    EXPECT_EQ(list.body.find(session["token"].get<std::string>()), std::string::npos) << list.body;
    const json listed = json::parse(list.body)["sessions"];
    ASSERT_EQ(listed.size(), 1u) << list.body;
    EXPECT_EQ(listed[0]["id"], id);
    EXPECT_EQ(listed[0]["vaults"], json::parse(R"([{"id":")" + vault + R"(","name":"team-a"}])"));
    EXPECT_EQ(listed[0]["expires_at"], session["expires_at"]);
    EXPECT_EQ(json::parse(api("GET", "/v1/sessions/" + id).body), listed[0]);

    auto refused = api("DELETE", "/v1/vaults/team-a");
    EXPECT_EQ(refused.status, 409) << refused.body;
    EXPECT_EQ(json::parse(refused.body)["error"]["code"], "vault_in_use");
    EXPECT_EQ(api("DELETE", "/v1/sessions/" + id).status, 204);
    EXPECT_TRUE(c->closed_by_peer(5000));
    auto deleted = api("DELETE", "/v1/vaults/" + vault);
    EXPECT_EQ(deleted.status, 204) << deleted.body;
    EXPECT_EQ(deleted.head.find("Content-Length"), std::string::npos) << deleted.head;

    auto gone = api("GET", "/v1/vaults/team-a");
    EXPECT_EQ(gone.status, 404);
    EXPECT_EQ(json::parse(gone.body)["error"]["code"], "unknown_vault");
    auto logs = api("GET", "/v1/logs?vault=nosuch");
    EXPECT_EQ(logs.status, 404) << logs.body;
    EXPECT_EQ(json::parse(logs.body)["error"]["code"], "unknown_vault");
    EXPECT_EQ(api("POST", "/v1/sessions", {{"vault_ids", {"team-a"}}}).status, 404);
    EXPECT_EQ(json::parse(api("GET", "/v1/sessions").body)["sessions"], json::array());
    expect_no_secret_in_any_response();
}

TEST_F(AdminTest, TcpAdminWithoutTokenFileIsAConfigError) {
    auto yaml = config_yaml();
    yaml.replace(yaml.find("admin:\n  token_file"),
                 std::string("admin:\n  token_file: " + dir_.file("admin.token") + "\n").size(), "");
    auto path = dir_.write("no-token.yaml", yaml);
    ServeProcess bad(path);
    EXPECT_FALSE(bad.started());
    EXPECT_EQ(bad.wait_exit(), 2);
    EXPECT_NE(bad.stderr_text().find("admin.token_file"), std::string::npos) << bad.stderr_text();
}

}  // namespace
}  // namespace vaultgate::test
