// The MITM path end to end: the upstream side (its certificate, keep-alive,
// the pool of upstream connections, state lifetime).
#include "mitm_fixture.hpp"

#include <chrono>

namespace vaultgate::test {
namespace {

TEST_F(MitmTest, UpstreamWithWrongNameGets502AndNoRequestBytes) {
    // wrong.test is bound, but its origin presents a certificate for api.bound.test.
    start_proxy("      - host: wrong.test\n        port: " + std::to_string(bound_.port()) +
                "\n        auth: { type: bearer, key: BENCH_KEY }\n");
    RawClient c(proxy_->port());
    auto head = c.connect("wrong.test:" + std::to_string(bound_.port()));
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    ASSERT_TRUE(c.start_tls(pki_.proxy_ca_cert, "wrong.test"));
    c.write("GET /echo HTTP/1.1\r\nHost: wrong.test:" + std::to_string(bound_.port()) + "\r\n\r\n");
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    EXPECT_EQ(bound_.raw(), "");
    EXPECT_EQ(bound_.tls_handshakes(), 0u);
}

TEST_F(MitmTest, SelfSignedUpstreamGets502AndNoRequestBytes) {
    auto rogue_files = pki_.server_files(dir_, "rogue.test", true);
    RecordingUpstream rogue(rogue_files.first, rogue_files.second);
    start_proxy("      - host: rogue.test\n        port: " + std::to_string(rogue.port()) +
                "\n        auth: { type: api-key, key: BENCH_KEY }\n");
    RawClient c(proxy_->port());
    auto head = c.connect("rogue.test:" + std::to_string(rogue.port()));
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    ASSERT_TRUE(c.start_tls(pki_.proxy_ca_cert, "rogue.test"));
    c.write("GET /echo HTTP/1.1\r\nHost: rogue.test:" + std::to_string(rogue.port()) + "\r\n\r\n");
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    EXPECT_NE(r->body.find("upstream_tls_failed"), std::string::npos) << r->body;
    EXPECT_EQ(rogue.raw(), "");
    EXPECT_EQ(rogue.tls_handshakes(), 0u);
}

TEST_F(MitmTest, KeepAliveServesSeveralRequestsOnOneUpstreamConnection) {
    auto c = open_bound();
    for (int i = 0; i < 3; ++i) {
        c->write(get("/echo", "x-api-key: placeholder\r\n"));
        auto r = c->read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 200);
        EXPECT_FALSE(r->closed);
    }
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 3u);
    for (const auto& req : reqs) EXPECT_EQ(req.header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_EQ(bound_.connections(), 1u);
}

TEST_F(MitmTest, RequestsPipelinedInSeparateTlsRecordsAreAllAnswered) {
    // Two TLS records sent back to back usually arrive in one read; the second
    // then waits in the TLS layer's buffer, not in the socket, and must still
    // be served rather than left until the idle timeout.
    auto c = open_bound();
    c->write(get("/echo", "x-api-key: placeholder\r\n"));
    c->write(get("/echo", "x-api-key: placeholder\r\n"));
    for (int i = 0; i < 2; ++i) {
        auto r = c->read_response(3000);
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(bound_.requests().size(), 2u);
}

TEST_F(MitmTest, NextConnectionOfTheSameSessionReusesTheUpstreamConnection) {
    // One I/O thread, so both client connections share its pool.
    proxy_ = std::make_unique<ProxyUnderTest>(base_config(dir_, pki_, bound_.port(), other_.port()), 1);
    for (int i = 0; i < 3; ++i) {
        auto c = open_bound();
        c->write(get("/echo", "Connection: close\r\n"));
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        // The proxy pools the upstream connection before it closes this one.
        EXPECT_TRUE(c->closed_by_peer());
    }
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 3u);
    for (const auto& req : reqs) EXPECT_EQ(req.header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_EQ(bound_.connections(), 1u);
}

// A client between two requests does not hold an upstream connection: the
// next client of the session takes the same one, and the first client's next
// request still finds one. A burst of clients shares a few connections.
// (One I/O thread: each thread has its own pool.)
TEST_F(MitmTest, ClientsOfASessionShareUpstreamConnectionsBetweenRequests) {
    proxy_ = std::make_unique<ProxyUnderTest>(base_config(dir_, pki_, bound_.port(), other_.port()), 1);
    auto first = open_bound();
    EXPECT_EQ(status_of_get(*first, "/echo"), 200);
    auto second = open_bound();  // while the first stays connected, idle
    EXPECT_EQ(status_of_get(*second, "/echo"), 200);
    EXPECT_EQ(status_of_get(*first, "/echo"), 200);
    EXPECT_EQ(bound_.connections(), 1u);
    ASSERT_EQ(bound_.requests().size(), 3u);
    for (const auto& req : bound_.requests())
        EXPECT_EQ(req.header_values("x-api-key"), std::vector<std::string>{test_secret});
}

// Eighteen exchanges in flight at once need eighteen upstream connections;
// all are handed back to the pool, and once they have waited a moment the
// sweep keeps 16 of them for the session and origin (max_per_key) and closes
// the other two, while every client stays connected.
TEST_F(MitmTest, ThePoolKeepsAtMostSixteenIdleConnectionsPerSessionAndOrigin) {
    proxy_ = std::make_unique<ProxyUnderTest>(base_config(dir_, pki_, bound_.port(), other_.port()), 1);
    auto clients = hold_sse_exchanges(
        bound_, 18, [this] { return open_bound(); }, get("/sse"));
    finish_sse_exchanges(bound_, clients);
    EXPECT_TRUE(eventually([&] { return bound_.connections_ended() == 2; }));
    // The sixteen kept serve the next requests: nothing new is dialed.
    for (auto& c : clients) EXPECT_EQ(status_of_get(*c, "/echo"), 200);
    EXPECT_EQ(bound_.connections(), 18u);
    EXPECT_EQ(bound_.connections_ended(), 2u);
}

// An origin may close a kept-alive connection while it waits in the pool.
// The next request notices before it sends anything and dials a new one.
TEST_F(MitmTest, APooledConnectionTheOriginClosedIsNotUsedAgain) {
    auto c = open_bound();
    EXPECT_EQ(status_of_get(*c, "/then-close"), 200);
    ASSERT_TRUE(eventually([&] { return bound_.connections_ended() == 1; }));
    EXPECT_EQ(status_of_get(*c, "/echo"), 200);
    EXPECT_EQ(bound_.connections(), 2u);
    ASSERT_EQ(bound_.requests().size(), 2u);
    EXPECT_EQ(bound_.requests().back().header_values("x-api-key"), std::vector<std::string>{test_secret});
}

TEST_F(MitmTest, APooledUpstreamConnectionIsClosedWhenItsIdleTimeoutRunsOut) {
    auto yaml = base_config(dir_, pki_, bound_.port(), other_.port());
    const std::string limits = "  idle_timeout: 10s\n";
    yaml.replace(yaml.find(limits), limits.size(), limits + "  upstream_idle_timeout: 300ms\n");
    proxy_ = std::make_unique<ProxyUnderTest>(yaml, 1);
    auto c = open_bound();
    const auto sent = std::chrono::steady_clock::now();
    c->write(get("/echo", "Connection: close\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(c->closed_by_peer());
    // No further traffic reaches the proxy: its sweep alone closes the pooled
    // connection once it has waited 300 ms, and not before (it was pooled,
    // not closed at once).
    EXPECT_TRUE(eventually([&] { return bound_.connections_ended() == 1; }));
    EXPECT_GE(std::chrono::steady_clock::now() - sent, std::chrono::milliseconds(300));
    // The next request of the session opens a new upstream connection.
    auto again = open_bound();
    again->write(get("/echo"));
    r = again->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(bound_.connections(), 2u);
}

// A replaced state (its credentials with it) is freed while long-lived
// connections stay open: neither a tunnel nor a MITM'd connection keeps the
// snapshot its CONNECT was decided with.
TEST_F(MitmTest, OpenTunnelsAndMitmConnectionsDoNotKeepAReplacedStateAlive) {
    RawClient tunnel(proxy_->port());
    auto head = tunnel.connect("other.test:" + std::to_string(other_.port()));
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    auto mitm = open_bound();
    mitm->write(get("/echo"));
    auto r = mitm->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);

    std::weak_ptr<const GatewayState> before = proxy_->server().state();
    std::vector<std::string> warnings;
    proxy_->server().replace_state(build_state(proxy_->config(), warnings));
    EXPECT_TRUE(eventually([&] { return before.expired(); }));
    // Both connections are still there and serve.
    EXPECT_TRUE(tunnel.start_tls(pki_.upstream_ca_cert, "other.test"));
    mitm->write(get("/echo"));
    r = mitm->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace vaultgate::test
