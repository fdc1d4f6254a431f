// What the admin listener refuses, through the real binary: requests without
// the token (answered on the head, before any body byte), connections past
// limits.admin_connections, bodies that take longer than limits.header_timeout
// in all, request bodies with duplicate keys, and services bound to addresses
// or wildcards that would hand a credential to the wrong place.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace vaultgate::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class AdminGuardTest : public ::testing::Test {
protected:
    AdminGuardTest() : pki_(dir_) {}

    void start(const std::string& limits = "") {
        auto path = dir_.write("vaultgate.yaml", serve_config(dir_, pki_, 443, 443, limits));
        proc_ = std::make_unique<ServeProcess>(path);
        ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    }

    ~AdminGuardTest() override {
        if (proc_ && proc_->started()) {
            proc_->signal(SIGTERM);
            EXPECT_EQ(proc_->wait_exit(), 0) << proc_->stderr_text();
        }
    }

    std::uint16_t admin_port() const { return proc_->admin_port(); }

    HttpResult api(const std::string& method, const std::string& path, const std::string& body = "") {
        return admin_request(admin_port(), method, path, serve_admin_token, body);
    }

    static std::string healthz_request() { return "GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n"; }

    TempDir dir_;
    TestPki pki_;
    std::unique_ptr<ServeProcess> proc_;
};

// A blocking socket whose reads give up after `read_timeout`: a read that
// returns then tells apart "the server closed" from "the server still waits".
class BlockingClient {
public:
    BlockingClient(std::uint16_t port, std::chrono::milliseconds read_timeout) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        timeval tv{static_cast<time_t>(read_timeout.count() / 1000),
                   static_cast<suseconds_t>((read_timeout.count() % 1000) * 1000)};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    }
    ~BlockingClient() { ::close(fd_); }
    bool connected() const { return connected_; }
    bool send(std::string_view bytes) {
        return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
    }

    enum class ReadEnd { closed, timed_out, data };
    // Reads until the server closes (EOF or reset), the timeout runs out, or data arrives.
    ReadEnd read_end(std::string* data = nullptr) {
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
            if (data) data->assign(buf, static_cast<std::size_t>(n));
            return ReadEnd::data;
        }
        if (n == 0 || errno == ECONNRESET) return ReadEnd::closed;
        return ReadEnd::timed_out;
    }

private:
    int fd_ = -1;
    bool connected_ = false;
};

// --- the token on the head ---------------------------------------------------------

TEST_F(AdminGuardTest, RequestWithoutTheTokenGets401OnItsHeadWithoutTheBodyBeingAwaited) {
    start();
    for (const std::string auth : {"", "Authorization: Bearer wrong-token-wrong-token\r\n"}) {
        RawClient c(admin_port());
        // A large body is announced and never sent: the answer must not wait for it.
        c.write("POST /v1/vaults HTTP/1.1\r\nHost: admin\r\n" + auth +
                "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n");
        auto r = c.read_response(8000);
        ASSERT_TRUE(r) << "no answer before the body: " << auth;
        EXPECT_EQ(r->status, 401) << r->head;
        EXPECT_NE(r->body.find("\"unauthorized\""), std::string::npos) << r->body;
        EXPECT_TRUE(c.closed_by_peer(8000)) << "the connection stays open after the 401";
    }
    // A bodiless health check needs no token; one with a body does.
    RawClient h(admin_port());
    h.write("POST /healthz HTTP/1.1\r\nHost: admin\r\nContent-Length: 100000\r\n\r\n");
    auto r = h.read_response(8000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << r->head;
    EXPECT_EQ(admin_request(admin_port(), "GET", "/healthz", "").status, 200);
}

// --- limits.admin_connections -----------------------------------------------------------

TEST_F(AdminGuardTest, ConnectionsPastAdminConnectionsAreClosedWhileTheOthersAreHeld) {
    start("  admin_connections: 4\n");
    // Connections are accepted in order, so the first four take the four slots.
    std::vector<std::unique_ptr<RawClient>> held;
    for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<RawClient>(admin_port()));
    RawClient fifth(admin_port());
    EXPECT_TRUE(fifth.closed_by_peer(8000)) << "a fifth connection was kept open";

    for (auto& c : held) {
        c->write(healthz_request());
        auto r = c->read_response(8000);
        ASSERT_TRUE(r) << "a held connection was not served";
        EXPECT_EQ(r->status, 200);
    }
    // A slot freed is a slot for the next client.
    held.front()->close();
    EXPECT_TRUE(eventually([&] {
        RawClient c(admin_port());
        c.write(healthz_request());
        auto r = c.read_response(2000);
        return r && r->status == 200;
    }));
}

// --- one deadline for head and body ---------------------------------------------------------

TEST_F(AdminGuardTest, BodyTrickledByteByByteIsCutAtTheTotalDeadline) {
    start("  header_timeout: 1s\n");
    BlockingClient c(admin_port(), 10s);
    ASSERT_TRUE(c.connected());
    const auto began = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.send("POST /v1/vaults HTTP/1.1\r\nHost: admin\r\nAuthorization: Bearer " +
                       std::string(serve_admin_token) + "\r\nContent-Length: 200\r\n\r\n"));
    // Each byte comes well within any per-read timeout; only a total one ends this.
    std::atomic<bool> stop{false};
    std::thread trickle([&] {
        for (int i = 0; i < 200 && !stop; ++i) {
            if (!c.send(" ")) break;
            std::this_thread::sleep_for(100ms);
        }
    });
    std::string data;
    const auto end = c.read_end(&data);
    const auto took = std::chrono::steady_clock::now() - began;
    stop = true;
    trickle.join();
    EXPECT_EQ(end, BlockingClient::ReadEnd::closed) << "got: " << data;
    EXPECT_LT(took, 5s) << "the connection outlived the 1 s request deadline by far";
}

// --- request bodies ------------------------------------------------------------------------

TEST_F(AdminGuardTest, BodyThatNamesAKeyTwiceGets400) {
    start();
    auto r = api("POST", "/v1/vaults", R"({"name":"first","name":"second"})");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "duplicate_key") << r.body;
    auto v = api("POST", "/v1/vaults", R"({"name":"guarded"})");
    ASSERT_EQ(v.status, 201) << v.body;
    const auto id = json::parse(v.body)["id"].get<std::string>();
    ASSERT_EQ(api("POST", "/v1/vaults/" + id + "/credentials", R"({"name":"KEY","value":"v-123456"})").status, 201);
    r = api("POST", "/v1/vaults/" + id + "/services",
            R"({"host":"api.example.com","auth_config":{"type":"bearer","key":"KEY","key":"OTHER"}})");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "duplicate_key") << r.body;
    r = api("POST", "/v1/sessions",
            R"({"vault_ids":["guarded"],"egress_policy":{"allow_http":false,"allow_http":true}})");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "duplicate_key") << r.body;

    const auto listed = api("GET", "/v1/vaults").body;
    EXPECT_EQ(listed.find("first"), std::string::npos) << listed;
    EXPECT_EQ(listed.find("second"), std::string::npos) << listed;
    const auto shown = json::parse(api("GET", "/v1/vaults/" + id).body);
    EXPECT_TRUE(shown["services"].empty()) << shown.dump();
}

// --- where a service may point ------------------------------------------------------------

TEST_F(AdminGuardTest, ServicesOnThisMachineVaultgateOrAPublicSuffixAreRefused) {
    start();
    auto v = api("POST", "/v1/vaults", R"({"name":"guarded"})");
    ASSERT_EQ(v.status, 201) << v.body;
    const auto id = json::parse(v.body)["id"].get<std::string>();
    ASSERT_EQ(api("POST", "/v1/vaults/" + id + "/credentials", R"({"name":"KEY","value":"v-123456"})").status, 201);
    // The listeners are on 127.0.0.1 (ports chosen at start), so that address is
    // vaultgate's own; other loopback addresses are this machine's.
    const struct {
        std::string host;
        int port;
        const char* code;
    } refused[] = {
        {"127.0.0.1", proc_->proxy_port(), "own_listener"},
        {"127.0.0.1", proc_->admin_port(), "own_listener"},
        {"127.0.0.2", 443, "forbidden_address"},
        {"0.0.0.0", 443, "forbidden_address"},
        {"[::1]", 443, "forbidden_address"},
        {"localhost", 443, "forbidden_address"},
        {"169.254.169.254", 80, "forbidden_address"},
        {"[fd00:ec2::254]", 443, "forbidden_address"},
        {"fe80::1", 443, "forbidden_address"},
        {"*.co.uk", 443, "public_suffix_wildcard"},
        {"*.github.io", 443, "public_suffix_wildcard"},
    };
    for (const auto& c : refused) {
        const json body = {{"host", c.host}, {"port", c.port}, {"auth_config", {{"type", "bearer"}, {"key", "KEY"}}}};
        auto r = api("POST", "/v1/vaults/" + id + "/services", body.dump());
        EXPECT_EQ(r.status, 400) << c.host << ": " << r.body;
        const json answer = json::parse(r.body, nullptr, false);
        ASSERT_TRUE(answer.contains("error")) << r.body;
        EXPECT_EQ(answer["error"]["code"], c.code) << c.host << ": " << r.body;
        EXPECT_FALSE(answer["error"]["message"].get<std::string>().empty());
    }
    const auto shown = json::parse(api("GET", "/v1/vaults/" + id).body);
    EXPECT_TRUE(shown["services"].empty()) << shown.dump();
    // A registrable wildcard is fine.
    auto ok = api("POST", "/v1/vaults/" + id + "/services",
                  R"({"host":"*.example.co.uk","auth_config":{"type":"bearer","key":"KEY"}})");
    EXPECT_EQ(ok.status, 201) << ok.body;
}

TEST_F(AdminGuardTest, BootstrapRefusesToBindASecretToTheMetadataAddress) {
    start();
    constexpr const char* secret = "sk-bootstrap-METADATA-0123456789";
    proc_->forbid_in_stderr(secret);
    const auto env = json{{"METADATA_URL", "https://169.254.169.254"}, {"METADATA_API_KEY", secret}}.dump();
    auto boot =
        run_command({VAULTGATE_BINARY, "bootstrap", "--admin", "http://127.0.0.1:" + std::to_string(admin_port()),
                     "--token-file", dir_.file("admin.token"), "--vault", "meta", "--format", "json"},
                    env);
    EXPECT_NE(boot.exit_code, 0) << boot.out;
    EXPECT_NE(boot.err.find("forbidden_address"), std::string::npos) << boot.err;
    EXPECT_NE(boot.err.find("169.254.169.254 is a cloud metadata address"), std::string::npos) << boot.err;
    EXPECT_EQ(boot.out.find(secret), std::string::npos);
    EXPECT_EQ(boot.err.find(secret), std::string::npos);
    EXPECT_EQ(boot.out.find("HTTPS_PROXY"), std::string::npos) << "an env was printed: " << boot.out;
}

TEST_F(AdminGuardTest, ConfigFileServiceOnTheMetadataAddressIsAConfigError) {
    auto yaml = serve_config(dir_, pki_, 443, 443);
    const std::string bound = "      - host: api.bound.test\n";
    yaml.replace(yaml.find(bound), bound.size(), "      - host: 169.254.169.254\n");
    auto path = dir_.write("vaultgate.yaml", yaml);
    auto check = run_command({VAULTGATE_BINARY, "check-config", "--config", path});
    EXPECT_EQ(check.exit_code, 2) << check.out << check.err;
    EXPECT_NE(check.err.find("vaults[0].services[0].host: 169.254.169.254 is a cloud metadata address"),
              std::string::npos)
        << check.err;
}

}  // namespace
}  // namespace vaultgate::test
