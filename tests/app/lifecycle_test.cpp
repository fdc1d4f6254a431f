// Graceful lifecycle of the real binary: SIGTERM drains (in-flight streams
// finish, or are cut at drain_timeout, while new connections are refused);
// SIGHUP reloads a good config and refuses a broken one.
#include "harness.hpp"
#include "test_text.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

namespace vaultgate::test {
namespace {

class LifecycleTest : public ::testing::Test {
protected:
    LifecycleTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          other_files_(pki_.server_files(dir_, "new.test")),
          bound_(bound_files_.first, bound_files_.second),
          other_(other_files_.first, other_files_.second) {}

    void start(const std::string& limits = "") {
        config_path_ = dir_.write("vaultgate.yaml", serve_config(dir_, pki_, bound_.port(), bound_.port(), limits));
        proc_ = std::make_unique<ServeProcess>(config_path_);
        ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    }

    std::string bound_authority() const { return "api.bound.test:" + std::to_string(bound_.port()); }

    std::unique_ptr<RawClient> open_sse() {
        auto c = std::make_unique<RawClient>(proc_->proxy_port());
        EXPECT_EQ(c->connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test"));
        c->write("GET /sse HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
        std::string seen;
        for (int i = 0; i < 50 && seen.find("data: first") == std::string::npos; ++i) seen += c->read_some(200);
        EXPECT_NE(seen.find("data: first"), std::string::npos);
        return c;
    }

    bool new_connections_refused() {
        asio::io_context ioc;
        tcp::socket s(ioc);
        boost::system::error_code ec;
        s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), proc_->proxy_port()), ec);
        return static_cast<bool>(ec);
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_, other_files_;
    RecordingUpstream bound_, other_;
    std::string config_path_;
    std::unique_ptr<ServeProcess> proc_;
};

TEST_F(LifecycleTest, SigtermLetsAnInFlightStreamFinishAndRefusesNewConnections) {
    start("  drain_timeout: 20s\n");
    auto c = open_sse();
    proc_->signal(SIGTERM);
    // The listener closes first; the stream is still open.
    bool refused = false;
    for (int i = 0; i < 50 && !refused; ++i) {
        refused = new_connections_refused();
        if (!refused) c->read_some(50);
    }
    EXPECT_TRUE(refused);
    bound_.release_sse();
    std::string rest;
    for (int i = 0; i < 50 && rest.find("0\r\n\r\n") == std::string::npos; ++i) rest += c->read_some(200);
    EXPECT_NE(rest.find("data: second"), std::string::npos);
    EXPECT_EQ(proc_->wait_exit(20), 0);
}

TEST_F(LifecycleTest, SigtermCutsAStreamAtDrainTimeout) {
    start("  drain_timeout: 1s\n");
    auto c = open_sse();
    auto t0 = std::chrono::steady_clock::now();
    proc_->signal(SIGTERM);
    EXPECT_EQ(proc_->wait_exit(15), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    EXPECT_TRUE(c->closed_by_peer(3000));
}

TEST_F(LifecycleTest, SighupReloadsAGoodConfigAndRefusesABrokenOne) {
    start();
    auto new_authority = "new.test:" + std::to_string(other_.port());
    {
        RawClient c(proc_->proxy_port());
        EXPECT_EQ(c.connect(new_authority).rfind("HTTP/1.1 403", 0), 0u);
    }
    // Good: new.test becomes allowed.
    dir_.write("vaultgate.yaml", serve_config(dir_, pki_, bound_.port(), bound_.port(), "",
                                              ", \"new.test:" + std::to_string(other_.port()) + "\""));
    proc_->signal(SIGHUP);
    bool allowed = false;
    for (int i = 0; i < 50 && !allowed; ++i) {
        RawClient c(proc_->proxy_port());
        allowed = c.connect(new_authority).rfind("HTTP/1.1 200", 0) == 0;
        if (!allowed) c.closed_by_peer(100);
    }
    EXPECT_TRUE(allowed);

    // Broken: refused with a log line, the running config stays.
    dir_.write("vaultgate.yaml", "listen: [this is not valid\n");
    proc_->signal(SIGHUP);
    bool logged = false;
    for (int i = 0; i < 50 && !logged; ++i) {
        logged = proc_->stderr_text().find("reload refused") != std::string::npos;
        if (!logged) {
            RawClient c(proc_->proxy_port());
            c.closed_by_peer(100);
        }
    }
    EXPECT_TRUE(logged) << proc_->stderr_text();
    {
        RawClient c(proc_->proxy_port());
        EXPECT_EQ(c.connect(new_authority).rfind("HTTP/1.1 200", 0), 0u);
    }
    proc_->signal(SIGTERM);
    EXPECT_EQ(proc_->wait_exit(), 0);
}

// An emptied file (a truncating write, an editor caught mid-save) would reset
// every vault, session and policy to the defaults; it is refused like any
// broken config, with a log line, and the running config stays.
TEST_F(LifecycleTest, SighupWithAnEmptyConfigFileKeepsTheRunningConfig) {
    start();
    const auto allowed = "other.test:" + std::to_string(bound_.port());
    {
        RawClient c(proc_->proxy_port());
        ASSERT_EQ(c.connect(allowed).rfind("HTTP/1.1 200", 0), 0u);
    }
    std::size_t reloads = 0;
    for (const char* emptied : {"", "  \n# emptied by hand\n\n"}) {
        dir_.write("vaultgate.yaml", emptied);
        proc_->signal(SIGHUP);
        ++reloads;
        // Each SIGHUP ends in one of the two log lines.
        ASSERT_TRUE(eventually([&] {
            const auto err = proc_->stderr_text();
            return count_of(err, "reload refused") + count_of(err, "reload done") == reloads;
        })) << proc_->stderr_text();
        const auto err = proc_->stderr_text();
        EXPECT_EQ(count_of(err, "reload refused"), reloads) << err;
        EXPECT_EQ(count_of(err, "the config file is empty"), reloads) << err;
        RawClient c(proc_->proxy_port());
        EXPECT_EQ(c.connect(allowed).rfind("HTTP/1.1 200", 0), 0u) << "after '" << emptied << "'";
    }
    proc_->signal(SIGTERM);
    EXPECT_EQ(proc_->wait_exit(), 0);

    // check-config refuses it the same way.
    const auto r = run_command({VAULTGATE_BINARY, "check-config", "--config", config_path_});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(config_path_ + ":1:1: the config file is empty"), std::string::npos) << r.err;
}

TEST_F(LifecycleTest, NotifiesSystemdOfReadyReloadingAndStopping) {
    auto sock_path = dir_.file("notify.sock");
    asio::io_context ioc;
    asio::local::datagram_protocol::socket notify(ioc);
    notify.open();
    notify.bind(asio::local::datagram_protocol::endpoint(sock_path));
    notify.non_blocking(true);
    config_path_ = dir_.write("vaultgate.yaml", serve_config(dir_, pki_, bound_.port(), bound_.port()));
    proc_ =
        std::make_unique<ServeProcess>(config_path_, std::map<std::string, std::string>{{"NOTIFY_SOCKET", sock_path}});
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    std::string seen;
    auto drain = [&](const std::string& until) {
        for (int i = 0; i < 100 && seen.find(until) == std::string::npos; ++i) {
            char buf[512];
            boost::system::error_code ec;
            auto n = notify.receive(asio::buffer(buf), 0, ec);
            if (!ec)
                seen.append(buf, n).append("|");
            else
                proc_->stderr_text(), ::usleep(20000);
        }
    };
    drain("READY=1");
    proc_->signal(SIGHUP);
    drain("RELOADING=1");
    proc_->signal(SIGTERM);
    drain("STOPPING=1");
    EXPECT_NE(seen.find("READY=1"), std::string::npos) << seen;
    EXPECT_NE(seen.find("RELOADING=1"), std::string::npos) << seen;
    EXPECT_NE(seen.find("STOPPING=1"), std::string::npos) << seen;
    EXPECT_EQ(proc_->wait_exit(), 0);
}

TEST_F(LifecycleTest, CheckConfigExitCodes) {
    auto good = dir_.write("good.yaml", serve_config(dir_, pki_, 443, 443));
    auto r = run_command({VAULTGATE_BINARY, "check-config", "--config", good});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out + r.err, "");
    auto bad = dir_.write("bad.yaml", "listen:\n  proxy: 127.0.0.1:3128\n  bogus: 1\n");
    r = run_command({VAULTGATE_BINARY, "check-config", "--config", bad});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("bad.yaml:3:3"), std::string::npos) << r.err;
    r = run_command({VAULTGATE_BINARY, "check-config"});
    EXPECT_EQ(r.exit_code, 2);
    r = run_command({VAULTGATE_BINARY, "--version"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind("vaultgate ", 0), 0u);
    EXPECT_NE(r.out.find(" (commit "), std::string::npos) << r.out;
}

TEST_F(LifecycleTest, CaInitWritesAPrivateKeyAndRefusesToOverwrite) {
    auto out = dir_.file("newca");
    auto r = run_command({VAULTGATE_BINARY, "ca", "init", "--out", out, "--name", "Test CA"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat((out + "/ca-key.pem").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    r = run_command({VAULTGATE_BINARY, "ca", "init", "--out", out});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("ca.pem"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace vaultgate::test
