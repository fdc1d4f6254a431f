// Limits and timeouts against the real binary, with tight limits so each test
// takes seconds: big and many headers, slow clients at each stage, a client
// that never reads, floods of idle connections, the per-client cap, and
// descriptor exhaustion.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

namespace vaultgate::test {
namespace {

class LimitsTest : public ::testing::Test {
protected:
    LimitsTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          bound_(bound_files_.first, bound_files_.second) {}

    void start(const std::string& limits, int max_files = 0) {
        auto path = dir_.write("vaultgate.yaml", serve_config(dir_, pki_, bound_.port(), bound_.port(), limits));
        proc_ = std::make_unique<ServeProcess>(path, std::map<std::string, std::string>{}, max_files);
        ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    }

    void TearDown() override {
        if (!proc_) return;
        // Whatever the test did, the proxy is still up and serving (once it has
        // seen the test's own connections go).
        EXPECT_TRUE(eventually([&] { return still_serves(); }));
        proc_->signal(SIGTERM);
        EXPECT_EQ(proc_->wait_exit(), 0) << proc_->stderr_text();
    }

    std::string bound_authority() const { return "api.bound.test:" + std::to_string(bound_.port()); }

    bool still_serves() {
        RawClient c(proc_->proxy_port());
        if (c.connect(bound_authority()).rfind("HTTP/1.1 200", 0) != 0) return false;
        if (!c.start_tls(pki_.proxy_ca_cert, "api.bound.test")) return false;
        c.write("GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
        auto r = c.read_response();
        return r && r->status == 200;
    }

    std::unique_ptr<RawClient> open_bound() {
        auto c = std::make_unique<RawClient>(proc_->proxy_port());
        EXPECT_EQ(c->connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test"));
        return c;
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_;
    RecordingUpstream bound_;
    std::unique_ptr<ServeProcess> proc_;
};

TEST_F(LimitsTest, OversizeHeadGets431AndLongRequestLine414) {
    start("  header_bytes: 2048\n  header_count: 10\n");
    {
        RawClient c(proc_->proxy_port());
        auto head = c.connect(bound_authority(), "X-Big: " + std::string(3000, 'a') + "\r\n");
        EXPECT_EQ(head.rfind("HTTP/1.1 431", 0), 0u) << head.substr(0, 40);
    }
    {
        auto c = open_bound();
        c->write("GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\nX-Big: " + std::string(3000, 'a') +
                 "\r\n\r\n");
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 431);
    }
    {
        auto c = open_bound();
        c->write("GET /" + std::string(4000, 'p') + " HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_TRUE(r->status == 414 || r->status == 431) << r->status;
    }
    EXPECT_EQ(bound_.requests().size(), 0u);
}

TEST_F(LimitsTest, TooManyFieldsGets431) {
    start("  header_count: 10\n");
    auto c = open_bound();
    std::string many;
    for (int i = 0; i < 20; ++i) many += "X-F" + std::to_string(i) + ": v\r\n";
    c->write("GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n" + many + "\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431);
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(LimitsTest, SlowlorisOnTheConnectLineIsCut) {
    start("  handshake_timeout: 1s\n");
    RawClient c(proc_->proxy_port());
    c.write("CONNECT api.bound");
    EXPECT_TRUE(c.closed_by_peer(5000));
}

TEST_F(LimitsTest, SlowlorisOnTheTlsHandshakeIsCut) {
    start("  handshake_timeout: 1s\n");
    RawClient c(proc_->proxy_port());
    ASSERT_EQ(c.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
    c.write(std::string("\x16\x03\x01", 3));  // the start of a ClientHello, then nothing
    EXPECT_TRUE(c.closed_by_peer(5000));
}

TEST_F(LimitsTest, SlowlorisOnTheHeadersGets408) {
    start("  header_timeout: 1s\n");
    auto c = open_bound();
    c->write("GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\nX-Slow: ");
    auto r = c->read_response(5000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c->closed_by_peer(3000));
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(LimitsTest, IdleKeepAliveConnectionIsClosed) {
    start("  idle_timeout: 1s\n");
    auto c = open_bound();
    c->write("GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
    ASSERT_TRUE(c->read_response());
    EXPECT_TRUE(c->closed_by_peer(5000));
}

TEST_F(LimitsTest, ClientThatNeverReadsKeepsProxyMemoryBounded) {
    start("  idle_timeout: 3s\n  response_timeout: 3s\n");
    long before = proc_->rss_kib();
    auto c = open_bound();
    // 256 MiB that the client never reads: the proxy may buffer a little, not all.
    c->write("GET /big?n=268435456 HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
    long peak = before;
    for (int i = 0; i < 20; ++i) {
        c->read_some(100);  // returns at once when data is waiting; never drains much
        peak = std::max(peak, proc_->rss_kib());
    }
    EXPECT_LT(peak - before, 32 * 1024) << "proxy grew by " << (peak - before) << " KiB";
    // The stalled transfer is cut at the idle timeout.
    EXPECT_TRUE(c->closed_by_peer(30000));
}

TEST_F(LimitsTest, TwoThousandIdleConnectionsThenANormalRequestIsServed) {
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < 4500) {
        lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 8192);
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    ASSERT_GE(lim.rlim_cur, 4500u) << "needs RLIMIT_NOFILE of at least 4500";
    start("  handshake_timeout: 30s\n  max_connections_per_client: 5000\n", 8192);
    asio::io_context ioc;
    std::vector<std::unique_ptr<tcp::socket>> idle;
    for (int i = 0; i < 2000; ++i) {
        auto s = std::make_unique<tcp::socket>(ioc);
        s->connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), proc_->proxy_port()));
        idle.push_back(std::move(s));
    }
    EXPECT_TRUE(still_serves());
}

TEST_F(LimitsTest, PerClientCapRefusesTheExtraConnectionOnly) {
    start("  max_connections_per_client: 5\n");
    std::vector<std::unique_ptr<RawClient>> held;
    for (int i = 0; i < 5; ++i) held.push_back(open_bound());
    RawClient extra(proc_->proxy_port());
    EXPECT_TRUE(extra.closed_by_peer(3000));
    // Existing ones are unaffected.
    held.front()->write("GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
    auto r = held.front()->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    held.clear();
}

// 72 descriptors leave 8 for connections (64 are kept in reserve): four
// clients with their upstreams, of which pooled upstream connections may take
// at most a quarter. Each pooled one leaves less room for clients, until a
// client is refused for it: then the pools are emptied for the next one.
TEST_F(LimitsTest, PooledUpstreamConnectionsCountAgainstTheDescriptorBudget) {
    start("  handshake_timeout: 30s\n", 72);
    const std::string get = "GET /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n";
    // Three exchanges in flight at once need three upstream connections (the
    // origin holds /sse open until released).
    auto clients = hold_sse_exchanges(
        bound_, 3, [this] { return open_bound(); }, "GET /sse HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
    finish_sse_exchanges(bound_, clients);
    // Between requests each client lends its upstream connection to the pool.
    // The clients' own places in the budget cover them, so all three are
    // kept, although only two fit in the pooled quarter: every client's next
    // request finds one, and nothing is dialed again.
    for (auto& c : clients) {
        c->write(get + "\r\n");
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(bound_.connections(), 3u);
    EXPECT_EQ(bound_.connections_ended(), 0u);
    // The clients end, each after one more request. The connections they leave
    // need places of their own: two are kept, the third is closed.
    for (auto& c : clients) {
        c->write(get + "Connection: close\r\n\r\n");
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_TRUE(c->closed_by_peer());
    }
    clients.clear();
    EXPECT_TRUE(eventually([&] { return bound_.connections_ended() == 1; }));
    EXPECT_EQ(bound_.connections(), 3u);
    // The client sockets are closed when their connections' coroutines end,
    // which can come after the client saw the close: wait for that.
    EXPECT_TRUE(eventually([&] {
        return admin_request(proc_->admin_port(), "GET", "/metrics", serve_admin_token, "")
                   .body.find("\nvaultgate_connections_active 0\n") != std::string::npos;
    }));

    // With two descriptors pooled, three clients fit and a fourth does not.
    std::vector<std::unique_ptr<RawClient>> held;
    for (int i = 0; i < 3; ++i) held.push_back(open_bound());
    EXPECT_EQ(bound_.connections_ended(), 1u);  // the pooled ones are still open
    RawClient extra(proc_->proxy_port());
    EXPECT_TRUE(extra.closed_by_peer(3000));

    // That refusal emptied the pools; their descriptors are back in the
    // budget, and the next client fits beside the three.
    EXPECT_TRUE(eventually([&] { return bound_.connections_ended() == 3; }));
    std::unique_ptr<RawClient> fourth;
    EXPECT_TRUE(eventually([&] {
        fourth = std::make_unique<RawClient>(proc_->proxy_port());
        return fourth->connect(bound_authority()).rfind("HTTP/1.1 200", 0) == 0;
    }));
    fourth.reset();
    held.clear();
}

TEST_F(LimitsTest, DescriptorExhaustionDoesNotSpinAndRecovers) {
    start("  handshake_timeout: 30s\n", 96);
    double cpu_before = proc_->cpu_seconds();
    {
        asio::io_context ioc;
        std::vector<std::unique_ptr<tcp::socket>> flood;
        for (int i = 0; i < 300; ++i) {
            auto s = std::make_unique<tcp::socket>(ioc);
            boost::system::error_code ec;
            s->connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), proc_->proxy_port()), ec);
            flood.push_back(std::move(s));
        }
        // Give a spinning accept loop time to show itself; a healthy one sleeps.
        RawClient probe(proc_->proxy_port());
        probe.closed_by_peer(2000);
    }
    double cpu_used = proc_->cpu_seconds() - cpu_before;
    EXPECT_LT(cpu_used, 1.0) << "the accept loop spun";
    // The flood is gone; TearDown checks that a normal request is served.
}

}  // namespace
}  // namespace vaultgate::test
