// SIGHUP on the real binary: upstream.*, log.* and limits.* take effect
// without a restart; keys read only at start are named in a warning while the
// rest of the reload applies; a second SIGTERM during the drain exits at once.
#include "app/reload.hpp"
#include "harness.hpp"
#include "test_text.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>

namespace vaultgate::test {
namespace {

// A changed database URL is named, never shown: the warning goes to the log.
TEST(ReloadWarnings, AChangedStoreUrlIsNamedNotShown) {
    Config started, next;
    started.store_url = "postgresql://vaultgate@db-a.internal/vaultgate?sslpassword=hunter2-secret";
    next.store_url = "postgresql://vaultgate@db-b.internal/vaultgate";
    EXPECT_EQ(start_only_changes(started, next), std::vector<std::string>{"store.url changed"});
    EXPECT_TRUE(start_only_changes(next, next).empty());
}

class ReloadTest : public ::testing::Test {
protected:
    ReloadTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          bound_(bound_files_.first, bound_files_.second) {}

    // serve_config's text, which the tests edit before each start or reload.
    std::string config_text(std::uint16_t bound_port, const std::string& limits = "") const {
        return serve_config(dir_, pki_, bound_port, bound_.port(), limits);
    }

    void start(const std::string& text) {
        config_path_ = dir_.write("vaultgate.yaml", text);
        proc_ = std::make_unique<ServeProcess>(config_path_);
        ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    }

    // Writes the config and sends SIGHUP; returns once the reload's last line
    // ("reload done" or "reload refused") is on stderr.
    void reload(const std::string& text) {
        dir_.write("vaultgate.yaml", text);
        const auto ends = [this] {
            const auto err = proc_->stderr_text();
            return count_of(err, "reload done") + count_of(err, "reload refused");
        };
        const auto before = ends();
        proc_->signal(SIGHUP);
        ASSERT_TRUE(eventually([&] { return ends() > before; })) << proc_->stderr_text();
    }

    // GET `path` from api.bound.test:port through the MITM; the status, or 0.
    int get_bound(std::uint16_t port, const std::string& path = "/") {
        const auto authority = "api.bound.test:" + std::to_string(port);
        RawClient c(proc_->proxy_port());
        if (c.connect(authority).rfind("HTTP/1.1 200", 0) != 0) return 0;
        if (!c.start_tls(pki_.proxy_ca_cert, "api.bound.test")) return 0;
        c.write("GET " + path + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
        auto r = c.read_response();
        return r ? r->status : 0;
    }

    // False also when the proxy resets the connection (a refused admission).
    bool connect_allowed(const std::string& authority) {
        try {
            RawClient c(proc_->proxy_port());
            return c.connect(authority).rfind("HTTP/1.1 200", 0) == 0;
        } catch (const std::exception&) {
            return false;
        }
    }

    void stop() {
        proc_->signal(SIGTERM);
        EXPECT_EQ(proc_->wait_exit(), 0) << proc_->stderr_text();
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_;
    RecordingUpstream bound_;
    std::string config_path_;
    std::unique_ptr<ServeProcess> proc_;
};

TEST_F(ReloadTest, AnAddedResolveEntryMakesABoundHostReachable) {
    const auto pinned = config_text(bound_.port(), "  connect_timeout: 2s\n");
    const auto unpinned = replace_all(pinned, "    api.bound.test: 127.0.0.1\n", "");
    ASSERT_NE(pinned, unpinned);
    start(unpinned);
    // The .test name does not resolve: no way to the origin.
    EXPECT_NE(get_bound(bound_.port(), "/before"), 200);
    EXPECT_TRUE(bound_.requests().empty());

    reload(pinned);
    EXPECT_EQ(get_bound(bound_.port(), "/after"), 200) << proc_->stderr_text();
    ASSERT_EQ(bound_.requests().size(), 1u);
    EXPECT_EQ(bound_.requests()[0].target, "/after");
    stop();
}

TEST_F(ReloadTest, SwitchingUpstreamCaFileChangesWhichOriginVerifies) {
    // An origin whose certificate another CA signed, with that CA's file.
    const auto rogue_files = pki_.server_files(dir_, "api.bound.test", /*rogue=*/true);
    RecordingUpstream rogue(rogue_files.first, rogue_files.second);
    const auto rogue_ca = dir_.write("rogue-ca.pem", pki_.rogue_ca->cert_pem());

    const auto trusting_upstream_ca = config_text(rogue.port());
    start(trusting_upstream_ca);
    EXPECT_EQ(get_bound(rogue.port()), 502);
    EXPECT_TRUE(rogue.requests().empty());

    const auto trusting_rogue_ca =
        replace_all(trusting_upstream_ca, "ca_file: " + pki_.upstream_ca_cert, "ca_file: " + rogue_ca);
    ASSERT_NE(trusting_rogue_ca, trusting_upstream_ca);
    reload(trusting_rogue_ca);
    EXPECT_EQ(get_bound(rogue.port()), 200) << proc_->stderr_text();
    EXPECT_EQ(rogue.requests().size(), 1u);

    // And back: the first trust store applies again to new connections.
    reload(trusting_upstream_ca);
    EXPECT_EQ(get_bound(rogue.port()), 502);
    stop();
}

TEST_F(ReloadTest, ALogLevelChangeTakesEffect) {
    const auto info = config_text(bound_.port());
    start(info);
    reload(info);
    EXPECT_EQ(count_of(proc_->stderr_text(), "SIGHUP: reloading"), 1u);

    // At warn, the next reload's info lines are gone; its warning is not.
    const auto warn = replace_all(info, "  level: info\n", "  level: warn\n");
    ASSERT_NE(warn, info);
    reload(warn);
    const auto moved = replace_all(warn, "proxy: 127.0.0.1:0", "proxy: 127.0.0.1:" + std::to_string(free_port()));
    dir_.write("vaultgate.yaml", moved);
    proc_->signal(SIGHUP);
    ASSERT_TRUE(eventually([&] { return proc_->stderr_text().find("listen.proxy changed") != std::string::npos; }))
        << proc_->stderr_text();
    const auto err = proc_->stderr_text();
    EXPECT_EQ(count_of(err, "SIGHUP: reloading"), 2u) << err;
    EXPECT_EQ(count_of(err, "reload done"), 2u) << err;
    stop();
}

TEST_F(ReloadTest, ANewAccessLogPathGetsTheLinesAfterTheReload) {
    const auto first = config_text(bound_.port());
    start(first);
    const auto old_log = dir_.file("access.log");
    const auto new_log = dir_.file("access-new.log");
    EXPECT_EQ(get_bound(bound_.port(), "/to-the-old-log"), 200);
    // The line is written after the client has its answer: wait for it, or
    // the reload may come first and the line belong to the new file.
    ASSERT_TRUE(eventually([&] { return read_text_file(old_log).find("/to-the-old-log") != std::string::npos; }));

    reload(replace_all(first, "access: " + old_log, "access: " + new_log));
    EXPECT_EQ(get_bound(bound_.port(), "/to-the-new-log"), 200);
    EXPECT_TRUE(eventually([&] { return read_text_file(new_log).find("/to-the-new-log") != std::string::npos; }));
    EXPECT_EQ(read_text_file(old_log).find("/to-the-new-log"), std::string::npos);
    EXPECT_EQ(read_text_file(new_log).find("/to-the-old-log"), std::string::npos);
    stop();
}

// logrotate's way: move the file, then SIGHUP; the log is opened anew.
TEST_F(ReloadTest, SighupReopensAnAccessLogMovedAway) {
    const auto text = config_text(bound_.port());
    start(text);
    const auto log = dir_.file("access.log");
    EXPECT_EQ(get_bound(bound_.port(), "/before-rotation"), 200);
    ASSERT_TRUE(eventually([&] { return read_text_file(log).find("/before-rotation") != std::string::npos; }));
    ASSERT_EQ(std::rename(log.c_str(), (log + ".1").c_str()), 0);

    reload(text);
    EXPECT_EQ(get_bound(bound_.port(), "/after-rotation"), 200);
    EXPECT_TRUE(eventually([&] { return read_text_file(log).find("/after-rotation") != std::string::npos; }));
    EXPECT_EQ(read_text_file(log + ".1").find("/after-rotation"), std::string::npos);
    stop();
}

TEST_F(ReloadTest, AListenChangeIsNamedAndTheRestOfTheReloadApplies) {
    const auto first = config_text(bound_.port());
    start(first);
    const auto new_authority = "new.test:" + std::to_string(bound_.port());
    EXPECT_FALSE(connect_allowed(new_authority));

    const auto port = std::to_string(free_port());
    auto next = replace_all(first, "proxy: 127.0.0.1:0", "proxy: 127.0.0.1:" + port);
    next = replace_all(next, "allowed_domains: [", "allowed_domains: [\"" + new_authority + "\", ");
    reload(next);
    const auto err = proc_->stderr_text();
    EXPECT_NE(err.find(" warn reload: listen.proxy changed (127.0.0.1:0 -> 127.0.0.1:" + port +
                       "); it takes effect at the next start"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("listen.admin changed"), std::string::npos) << err;
    // Still on the old listener, with the new policy.
    EXPECT_TRUE(connect_allowed(new_authority));
    stop();
}

// Limits judge connections accepted after the reload; an open one stays.
TEST_F(ReloadTest, ALowerPerClientCapAppliesToNewConnections) {
    const auto first = config_text(bound_.port());
    start(first);
    const auto other = "other.test:" + std::to_string(bound_.port());
    RawClient held(proc_->proxy_port());
    ASSERT_EQ(held.connect(other).rfind("HTTP/1.1 200", 0), 0u);

    reload(replace_all(first, "limits:\n", "limits:\n  max_connections_per_client: 1\n"));
    EXPECT_FALSE(connect_allowed(other));
    EXPECT_FALSE(held.closed_by_peer(200));
    held.close();
    EXPECT_TRUE(eventually([&] { return connect_allowed(other); }));
    stop();
}

TEST_F(ReloadTest, ASecondSigtermDuringTheDrainExitsAtOnceAndCountsTheCut) {
    start(config_text(bound_.port(), "  drain_timeout: 60s\n"));
    const auto authority = "api.bound.test:" + std::to_string(bound_.port());
    RawClient c(proc_->proxy_port());
    ASSERT_EQ(c.connect(authority).rfind("HTTP/1.1 200", 0), 0u);
    ASSERT_TRUE(c.start_tls(pki_.proxy_ca_cert, "api.bound.test"));
    c.write("GET /sse HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    ASSERT_TRUE(eventually([&] { return bound_.requests().size() == 1; }));

    const auto t0 = std::chrono::steady_clock::now();
    proc_->signal(SIGTERM);
    ASSERT_TRUE(eventually([&] { return proc_->stderr_text().find("draining connections") != std::string::npos; }))
        << proc_->stderr_text();
    proc_->signal(SIGTERM);
    EXPECT_EQ(proc_->wait_exit(10), 1);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    EXPECT_NE(proc_->stderr_text().find("vaultgate: second signal: exiting now, 1 connection cut"), std::string::npos)
        << proc_->stderr_text();
    EXPECT_TRUE(c.closed_by_peer(3000));
    bound_.release_sse();
}

}  // namespace
}  // namespace vaultgate::test
