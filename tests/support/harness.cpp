#include "harness.hpp"

#include <gtest/gtest.h>

#include "vaultgate/observe/diag_log.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace vaultgate::test {

ProxyUnderTest::ProxyUnderTest(const std::string& yaml, unsigned threads) {
    if (std::getenv("VAULTGATE_TEST_DEBUG")) set_log_level(LogLevel::debug);
    config_ = parse_config(yaml, "test.yaml");
    std::vector<std::string> warnings;
    auto state = build_state(config_, warnings);
    ServerOptions options;
    options.threads = threads;
    server_ = make_server(config_, state, options);
    server_->start();
}

ProxyUnderTest::~ProxyUnderTest() {
    server_->stop(std::chrono::milliseconds(0));
    server_->wait();
}

bool ProxyUnderTest::wait_for_log(const std::string& needle, int timeout_ms) const {
    // Log lines are written when a connection ends, which may be just after the
    // client saw its answer; poll the file until the line is there or time runs out.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (access_log_text().find(needle) != std::string::npos) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string stop_and_read_access_log(std::unique_ptr<ProxyUnderTest>& proxy) {
    if (!proxy) return {};
    const std::string path = proxy->config().log_access;
    proxy.reset();
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string ProxyUnderTest::access_log_text() const {
    std::ifstream in(config_.log_access);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::uint16_t free_port(const std::string& ip) {
    asio::io_context ioc;
    tcp::acceptor a(ioc, tcp::endpoint(asio::ip::make_address(ip), 0));
    return a.local_endpoint().port();
}

std::string serve_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                         const std::string& limits, const std::string& allowed_extra) {
    dir.write("admin.token", std::string(serve_admin_token) + "\n");
    std::string key(32, '\0');
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i * 7 + 1);
    dir.write("master.key", key);
    auto secret_file = dir.write("secret.txt", std::string(test_secret) + "\n");
    std::ostringstream y;
    y << "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
      << "ca:\n  cert: " << pki.proxy_ca_cert << "\n  key: " << pki.proxy_ca_key << "\n"
      << "upstream:\n  ca_file: " << pki.upstream_ca_cert
      << "\n  resolve:\n    api.bound.test: 127.0.0.1\n    other.test: 127.0.0.1\n    new.test: 127.0.0.1\n"
      << "store:\n  path: " << dir.file("vaultgate.db") << "\n  master_key_file: " << dir.file("master.key") << "\n"
      << "admin:\n  token_file: " << dir.file("admin.token") << "\n"
      << "log:\n  access: " << dir.file("access.log") << "\n  level: info\n"
      << "limits:\n"
      << (limits.empty() ? "  idle_timeout: 30s\n" : limits)
      << "vaults:\n  - name: bench\n    credentials:\n      BENCH_KEY: { file: " << secret_file << " }\n"
      << "    services:\n      - host: api.bound.test\n        port: " << bound_port
      << "\n        auth: { type: api-key, key: BENCH_KEY }\n"
      << "sessions:\n  default: { vaults: [bench], egress_policy: test }\n"
      << "egress_policies:\n  test:\n    allowed_domains: [\"other.test:" << other_port << "\"" << allowed_extra
      << "]\n";
    return y.str();
}

// ---------------------------------------------------------------- base_config

bool eventually(const std::function<bool()>& condition, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (condition()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

std::vector<std::unique_ptr<RawClient>> hold_sse_exchanges(RecordingUpstream& origin, std::size_t count,
                                                           const std::function<std::unique_ptr<RawClient>()>& open,
                                                           const std::string& request) {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (std::size_t i = 0; i < count; ++i) {
        clients.push_back(open());
        clients.back()->write(request);
    }
    EXPECT_TRUE(eventually([&] { return origin.requests().size() == count; }));
    EXPECT_EQ(origin.connections(), count);
    return clients;
}

void finish_sse_exchanges(RecordingUpstream& origin, std::vector<std::unique_ptr<RawClient>>& clients) {
    origin.release_sse();
    for (auto& c : clients) {
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
}

std::string base_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                        const std::string& extra_service_yaml, const std::string& extra_policy_yaml) {
    auto secret_file = dir.write("secret.txt", std::string(test_secret) + "\n");
    std::ostringstream y;
    y << "listen:\n"
      << "  proxy: 127.0.0.1:0\n"
      << "  admin: 127.0.0.1:0\n"
      << "ca:\n"
      << "  cert: " << pki.proxy_ca_cert << "\n"
      << "  key: " << pki.proxy_ca_key << "\n"
      << "upstream:\n"
      << "  ca_file: " << pki.upstream_ca_cert << "\n"
      << "  resolve:\n"
      << "    api.bound.test: 127.0.0.1\n"
      << "    other.test: 127.0.0.1\n"
      << "    wrong.test: 127.0.0.1\n"
      << "    rogue.test: 127.0.0.1\n"
      << "store:\n"
      << "  path: " << dir.file("vaultgate.db") << "\n"
      << "log:\n"
      << "  access: " << dir.file("access.log") << "\n"
      << "  level: warn\n"
      << "limits:\n"
      << "  handshake_timeout: 3s\n"
      << "  header_timeout: 3s\n"
      << "  idle_timeout: 10s\n"
      << "vaults:\n"
      << "  - name: bench\n"
      << "    credentials:\n"
      << "      BENCH_KEY: { file: " << secret_file << " }\n"
      << "    services:\n"
      << "      - host: api.bound.test\n"
      << "        port: " << bound_port << "\n"
      << "        auth: { type: api-key, header: x-api-key, key: BENCH_KEY }\n"
      << extra_service_yaml << "sessions:\n"
      << "  default: { vaults: [bench], egress_policy: test }\n"
      << "egress_policies:\n"
      << "  test:\n"
      << "    allow_https: true\n"
      << "    allowed_domains: [\"other.test:" << other_port << "\"]\n"
      << extra_policy_yaml;
    return y.str();
}

}  // namespace vaultgate::test
