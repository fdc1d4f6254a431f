// The MITM path end to end: a real client, the proxy, and a recording TLS
// upstream, all on 127.0.0.1. Assertions are on what the upstream received and
// what the client saw.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace vaultgate::test {
namespace {

class MitmTest : public ::testing::Test {
protected:
    MitmTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          other_files_(pki_.server_files(dir_, "other.test")),
          bound_(bound_files_.first, bound_files_.second),
          other_(other_files_.first, other_files_.second) {}

    void SetUp() override { start_proxy(); }

    void start_proxy(const std::string& extra_services = "", const std::string& extra_policy = "") {
        proxy_.reset();
        proxy_ = std::make_unique<ProxyUnderTest>(
            base_config(dir_, pki_, bound_.port(), other_.port(), extra_services, extra_policy));
    }

    void TearDown() override {
        // Whatever happened in the test, no log line may carry the secret.
        EXPECT_EQ(stop_and_read_access_log(proxy_).find(test_secret), std::string::npos);
    }

    std::string bound_authority() const { return "api.bound.test:" + std::to_string(bound_.port()); }

    // CONNECT to the bound host and complete TLS against the proxy CA.
    std::unique_ptr<RawClient> open_bound() {
        auto c = std::make_unique<RawClient>(proxy_->port());
        auto head = c->connect(bound_authority());
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        std::string err;
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test", &err)) << err;
        return c;
    }

    // GET `path` on `c`; the response's status, 0 when none came.
    int status_of_get(RawClient& c, const std::string& path) {
        c.write(get(path));
        auto r = c.read_response();
        return r ? r->status : 0;
    }

    std::string get(const std::string& path, const std::string& extra = "") const {
        return "GET " + path + " HTTP/1.1\r\nHost: " + bound_authority() + "\r\n" + extra + "\r\n";
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_, other_files_;
    RecordingUpstream bound_, other_;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

TEST_F(MitmTest, InjectsExactlyOneKeyReplacingEveryVariant) {
    auto c = open_bound();
    c->write(get("/echo", "X-Api-Key: placeholder\r\nx-api-key: second\r\nX_API_KEY: third\r\nAccept: */*\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "ok");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(reqs[0].header_values("x_api_key").empty());
    EXPECT_EQ(reqs[0].header_values("accept"), std::vector<std::string>{"*/*"});
    EXPECT_EQ(reqs[0].target, "/echo");
    // The client never sees the secret.
    EXPECT_EQ(r->head.find(test_secret), std::string::npos);
}

TEST_F(MitmTest, AnIntermediateCaIsSentWithTheLeafSoAClientTrustingOnlyTheRootVerifies) {
    // A root and an intermediate signed by it, as a company PKI would issue.
    const auto chain = write_root_and_intermediate_ca(dir_);
    const auto& root = chain.root_cert;
    auto config = base_config(dir_, pki_, bound_.port(), other_.port());
    for (auto [from, to] : {std::pair{pki_.proxy_ca_cert, chain.intermediate_cert},
                            std::pair{pki_.proxy_ca_key, chain.intermediate_key}}) {
        auto at = config.find(from);
        ASSERT_NE(at, std::string::npos);
        config.replace(at, from.size(), to);
    }
    proxy_ = std::make_unique<ProxyUnderTest>(config);

    RawClient c(proxy_->port());
    ASSERT_EQ(c.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
    std::string err;
    ASSERT_TRUE(c.start_tls(root, "api.bound.test", &err)) << err;
    c.write(get("/echo", "x-api-key: placeholder\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    ASSERT_EQ(bound_.requests().size(), 1u);
    EXPECT_EQ(bound_.requests()[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
}

// Session resumption (tls_contexts.cpp), seen by OpenSSL's own client reconnecting
// five times with the session of its previous connection.
std::string reconnect_five_times(std::uint16_t proxy_port, const std::string& authority, const std::string& ca,
                                 const std::string& version_flag) {
    auto res = run_command({"openssl", "s_client", "-proxy", "127.0.0.1:" + std::to_string(proxy_port), "-connect",
                            authority, "-servername", "api.bound.test", version_flag, "-reconnect", "-CAfile", ca,
                            "-verify_return_error"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    return res.out;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

// A TLS 1.3 client resumes with its one ticket (and a fresh key exchange).
// (s_client -reconnect does not wait for a TLS 1.3 ticket: the session is
// saved after a whole exchange instead, and offered by a second s_client.)
TEST_F(MitmTest, ATls13ClientResumesItsLastSession) {
    const auto session = dir_.file("tls13-session.pem");
    auto client = [&](const std::string& session_flag) {
        return run_command({"openssl", "s_client", "-proxy", "127.0.0.1:" + std::to_string(proxy_->port()),
                            "-connect", bound_authority(), "-servername", "api.bound.test", "-tls1_3", session_flag,
                            session, "-CAfile", pki_.proxy_ca_cert, "-verify_return_error", "-ign_eof"},
                           get("/echo", "Connection: close\r\n"));
    };
    // (Each exits 1 at the end: vaultgate closes after `Connection: close`
    // without a close_notify, which s_client reports as an unexpected EOF.)
    auto first = client("-sess_out");
    EXPECT_EQ(count_of(first.out, "\nNew, TLSv1.3"), 1u) << first.out << first.err;
    EXPECT_NE(first.out.find("HTTP/1.1 200"), std::string::npos);
    ASSERT_TRUE(std::filesystem::exists(session));
    auto second = client("-sess_in");
    EXPECT_EQ(count_of(second.out, "\nReused, TLSv1.3"), 1u) << second.out;
    EXPECT_NE(second.out.find("HTTP/1.1 200"), std::string::npos);
}

// A TLS 1.2 client gets a full handshake each time: no ticket, no session cache.
TEST_F(MitmTest, ATls12ClientCannotResumeItsLastSession) {
    auto out = reconnect_five_times(proxy_->port(), bound_authority(), pki_.proxy_ca_cert, "-tls1_2");
    EXPECT_EQ(count_of(out, "\nNew, TLSv1.2"), 6u) << out;
    EXPECT_EQ(count_of(out, "\nReused, "), 0u);
    EXPECT_EQ(count_of(out, "TLS session ticket"), 0u);   // none offered either
}

// Both sides prefer AES-128-GCM: vaultgate's choice for TLS 1.2 clients...
TEST_F(MitmTest, ATls12ClientThatListsAes256FirstGetsAes128) {
    RawClient c(proxy_->port());
    SSL_CTX* client = c.tls_context().native_handle();
    SSL_CTX_set_max_proto_version(client, TLS1_2_VERSION);
    ASSERT_EQ(SSL_CTX_set_cipher_list(client, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"), 1);
    ASSERT_EQ(c.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
    std::string err;
    ASSERT_TRUE(c.start_tls(pki_.proxy_ca_cert, "api.bound.test", &err)) << err;
    EXPECT_STREQ(SSL_get_cipher_name(c.tls_native()), "ECDHE-ECDSA-AES128-GCM-SHA256");
    EXPECT_EQ(status_of_get(c, "/echo"), 200);
}

// ...and its first offer to a TLS 1.2 origin that takes the client's order, as nginx does.
TEST_F(MitmTest, ATls12OriginThatFollowsTheClientsOrderIsAskedForAes128First) {
    bound_.limit_to_tls12();
    auto c = open_bound();
    EXPECT_EQ(status_of_get(*c, "/echo"), 200);
    EXPECT_EQ(bound_.last_cipher(), "ECDHE-ECDSA-AES128-GCM-SHA256");
}

TEST_F(MitmTest, CurlThroughTheProxyGetsTheKeyInjected) {
    auto res = run_command({"curl", "-sS", "--max-time", "20", "--proxy",
                            "http://127.0.0.1:" + std::to_string(proxy_->port()), "--cacert", pki_.proxy_ca_cert,
                            "-H", "x-api-key: placeholder", "https://" + bound_authority() + "/echo"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(res.out, "ok");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"mitm\"")) << proxy_->access_log_text();
    EXPECT_TRUE(proxy_->wait_for_log("\"vault\":\"bench\"")) << proxy_->access_log_text();
}

TEST_F(MitmTest, AllowedHostIsTunnelledWithItsOwnCertificateAndThePlaceholder) {
    // Trusting only the upstream CA proves the client saw other.test's own certificate.
    auto res = run_command({"curl", "-sS", "--max-time", "20", "--proxy",
                            "http://127.0.0.1:" + std::to_string(proxy_->port()), "--cacert", pki_.upstream_ca_cert,
                            "-H", "x-api-key: placeholder",
                            "https://other.test:" + std::to_string(other_.port()) + "/echo"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(res.out, "ok");
    auto reqs = other_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{"placeholder"});
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"tunnel\"")) << proxy_->access_log_text();
}

TEST_F(MitmTest, DeniedHostGets403AndNoConnection) {
    CanaryListener canary;
    RawClient c(proxy_->port());
    auto head = c.connect("denied.test:" + std::to_string(canary.port()));
    EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << head;
    EXPECT_NE(head.find("X-Vaultgate-Reason: domain_not_allowed"), std::string::npos) << head;
    EXPECT_NE(head.find("\"error\":\"egress_denied\""), std::string::npos) << head;
    EXPECT_TRUE(c.closed_by_peer());

    RawClient by_ip(proxy_->port());
    head = by_ip.connect("127.0.0.1:" + std::to_string(canary.port()));
    EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << head;
    EXPECT_EQ(canary.accepted(), 0u);
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"denied\"")) << proxy_->access_log_text();
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"domain_not_allowed\"")) << proxy_->access_log_text();
}

TEST_F(MitmTest, BytesPipelinedAfterARefusedConnectAreNeverForwarded) {
    RawClient c(proxy_->port());
    auto head = c.send_plain("CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n"
                             "CONNECT other.test:" + std::to_string(other_.port()) + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << head;
    EXPECT_TRUE(c.closed_by_peer());
    EXPECT_EQ(other_.connections(), 0u);
}

TEST_F(MitmTest, HostHeaderForAnotherHostGets421AndNothingIsForwarded) {
    auto c = open_bound();
    c->write("GET /echo HTTP/1.1\r\nHost: other.test:" + std::to_string(other_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 421);
    EXPECT_TRUE(c->closed_by_peer());
    EXPECT_EQ(bound_.connections(), 0u);
    EXPECT_EQ(other_.connections(), 0u);
}

TEST_F(MitmTest, HostHeaderWithoutPortMeans443AndIsMisdirected) {
    auto c = open_bound();
    c->write("GET /echo HTTP/1.1\r\nHost: api.bound.test\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 421);
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(MitmTest, HostHeaderIsComparedAfterNormalisation) {
    auto c = open_bound();
    c->write("GET /echo HTTP/1.1\r\nHost: API.Bound.Test.:" + std::to_string(bound_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    ASSERT_EQ(bound_.requests().size(), 1u);
}

TEST_F(MitmTest, HostPortWithLeadingZeroIs400) {
    auto c = open_bound();
    c->write("GET /echo HTTP/1.1\r\nHost: api.bound.test:0" + std::to_string(bound_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(MitmTest, AbsoluteFormToAnotherAuthorityIsRefused) {
    auto c = open_bound();
    c->write("GET https://other.test:" + std::to_string(other_.port()) + "/echo HTTP/1.1\r\nHost: " +
             bound_authority() + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 421);
    EXPECT_EQ(bound_.connections(), 0u);
    EXPECT_EQ(other_.connections(), 0u);
}

// A string literal with an embedded NUL, kept whole.
template <std::size_t N>
std::string with_nul(const char (&literal)[N]) {
    return std::string(literal, N - 1);
}

struct SmugglingCase {
    const char* name;
    std::string request;  // {HOST} is replaced by the bound authority
};

class SmugglingTest : public MitmTest, public ::testing::WithParamInterface<SmugglingCase> {};

TEST_P(SmugglingTest, Gets400ClosesAndTheUpstreamSeesNoBytes) {
    auto request = GetParam().request;
    for (std::size_t pos; (pos = request.find("{HOST}")) != std::string::npos;)
        request.replace(pos, 6, bound_authority());
    auto c = open_bound();
    c->write(request);
    auto r = c->read_response();
    ASSERT_TRUE(r) << GetParam().name;
    EXPECT_EQ(r->status, 400) << GetParam().name;
    EXPECT_TRUE(c->closed_by_peer()) << GetParam().name;
    EXPECT_EQ(bound_.raw(), "") << GetParam().name;
    // The error page does not echo what was sent.
    EXPECT_EQ(r->body.find("smuggled"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, SmugglingTest,
    ::testing::Values(
        SmugglingCase{"cl_and_te", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 4\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nsmuggled"},
        SmugglingCase{"te_xchunked", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: xchunked\r\n\r\n"},
        SmugglingCase{"te_list", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"},
        SmugglingCase{"te_twice", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        SmugglingCase{"te_space_before_colon", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding : chunked\r\n\r\n"},
        SmugglingCase{"te_on_http10", "POST /echo HTTP/1.0\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        SmugglingCase{"two_content_lengths", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 3\r\n"
                                             "Content-Length: 4\r\n\r\nsmug"},
        SmugglingCase{"content_length_list", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 4, 4\r\n\r\nsmug"},
        SmugglingCase{"content_length_plus", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: +4\r\n\r\nsmug"},
        SmugglingCase{"bad_chunk_size", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                                        "zz\r\nsmuggled\r\n0\r\n\r\n"},
        SmugglingCase{"chunk_size_0x", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "0x5\r\nhello\r\n0\r\n\r\n"},
        SmugglingCase{"chunk_size_overflow", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                                             "fffffffffffffffff1\r\nsmuggled\r\n0\r\n\r\n"},
        SmugglingCase{"chunk_bare_lf", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "5\nhello\r\n0\r\n\r\n"},
        SmugglingCase{"obs_fold", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX-Folded: a\r\n b\r\n\r\n"},
        SmugglingCase{"bare_lf_header", "GET /echo HTTP/1.1\r\nHost: {HOST}\nX-A: b\r\n\r\n"},
        SmugglingCase{"bare_cr_header", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX-A: b\rc\r\n\r\n"},
        SmugglingCase{"nul_in_header", with_nul("GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX-A: b\0c\r\n\r\n")},
        SmugglingCase{"two_hosts", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nHost: {HOST}\r\n\r\n"},
        SmugglingCase{"empty_host", "GET /echo HTTP/1.1\r\nHost: \r\n\r\n"},
        SmugglingCase{"bad_header_name", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX A: b\r\n\r\n"},
        SmugglingCase{"trailer_content_length", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                "5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n"}),
    [](const auto& info) { return std::string(info.param.name); });

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
    for (const auto& req : bound_.requests()) EXPECT_EQ(req.header_values("x-api-key"), std::vector<std::string>{test_secret});
}

// Eighteen exchanges in flight at once need eighteen upstream connections;
// all are handed back to the pool, and once they have waited a moment the
// sweep keeps 16 of them for the session and origin (max_per_key) and closes
// the other two, while every client stays connected.
TEST_F(MitmTest, ThePoolKeepsAtMostSixteenIdleConnectionsPerSessionAndOrigin) {
    proxy_ = std::make_unique<ProxyUnderTest>(base_config(dir_, pki_, bound_.port(), other_.port()), 1);
    auto clients = hold_sse_exchanges(bound_, 18, [this] { return open_bound(); }, get("/sse"));
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

TEST_F(MitmTest, OneMebibytePostArrivesWhole) {
    auto c = open_bound();
    std::string body(1 << 20, 'b');
    c->write("POST /upload HTTP/1.1\r\nHost: " + bound_authority() + "\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body);
    auto r = c->read_response(30000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(body.size()));
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].body, body);
}

TEST_F(MitmTest, ChunkedPostIsDecodedAndReframed) {
    auto c = open_bound();
    c->write("POST /upload HTTP/1.1\r\nHost: " + bound_authority() +
             "\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: dropped\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "11");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].body, "hello world");
    EXPECT_EQ(bound_.raw().find("X-Trailer"), std::string::npos);
    EXPECT_EQ(bound_.raw().find("ext=1"), std::string::npos);
}

TEST_F(MitmTest, LargeDownloadStreams) {
    auto c = open_bound();
    c->write(get("/big?n=3000000"));
    auto r = c->read_response(30000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body.size(), 3000000u);
}

TEST_F(MitmTest, AClientResetInTheMiddleOfADownloadEndsOnlyThatExchange) {
    auto c = open_bound();
    c->write(get("/big?n=50000000"));
    ASSERT_FALSE(c->read_some().empty());   // the download is under way
    c->reset();
    // Writing to the reset client fails; the proxy closes the upstream
    // connection with the rest of the body on it instead of pooling it.
    EXPECT_TRUE(eventually([&] { return bound_.connections_ended() == 1; }, 10000));
    // The next client of the session is served, on a new upstream connection.
    auto next = open_bound();
    EXPECT_EQ(status_of_get(*next, "/echo"), 200);
    EXPECT_EQ(bound_.connections(), 2u);
}

TEST_F(MitmTest, ServerSentEventsArriveBeforeTheStreamEnds) {
    auto c = open_bound();
    c->write(get("/sse"));
    std::string seen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (seen.find("data: first") == std::string::npos && std::chrono::steady_clock::now() < deadline)
        seen += c->read_some(1000);
    EXPECT_NE(seen.find("data: first"), std::string::npos);
    EXPECT_EQ(seen.find("data: second"), std::string::npos);
    bound_.release_sse();
    while (seen.find("0\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline)
        seen += c->read_some(1000);
    EXPECT_NE(seen.find("data: second"), std::string::npos);
}

TEST_F(MitmTest, RedirectsArePassedBackNotFollowed) {
    auto c = open_bound();
    c->write(get("/redirect"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 302);
    EXPECT_NE(r->head.find("Location: https://elsewhere.test/landing"), std::string::npos);
    EXPECT_EQ(bound_.requests().size(), 1u);
}

TEST_F(MitmTest, UnframedResponseIsRechunkedAndKeepsTheClientConnection) {
    auto c = open_bound();
    c->write(get("/close"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "until-close body");
    c->write(get("/echo"));
    auto again = c->read_response();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->body, "ok");
    EXPECT_EQ(bound_.connections(), 2u);
}

TEST_F(MitmTest, UnframedResponseCutByAResetIsNotPassedOnAsComplete) {
    auto c = open_bound();
    c->write(get("/reset"));
    // Rechunked for the client; a reset must not end it with the last chunk.
    EXPECT_FALSE(c->read_response(5000));
    EXPECT_TRUE(c->closed_by_peer(5000));
}

TEST_F(MitmTest, WebSocketIsSplicedAfter101) {
    auto c = open_bound();
    c->write(get("/ws", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                        "Sec-WebSocket-Version: 13\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 101);
    c->write("frame-bytes-1");
    std::string echoed;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (echoed.size() < 13 && std::chrono::steady_clock::now() < deadline) echoed += c->read_some(1000);
    EXPECT_EQ(echoed, "frame-bytes-1");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("upgrade"), std::vector<std::string>{"websocket"});
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
}

TEST_F(MitmTest, Http10ClientGetsAClosedResponse) {
    auto c = open_bound();
    c->write("GET /echo HTTP/1.0\r\nHost: " + bound_authority() + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(c->closed_by_peer());
}

// A 103 reaches an HTTP/1.1 client before the final response; an HTTP/1.0
// client, which expects no 1xx, gets only the final one.
TEST_F(MitmTest, InformationalResponsesReachOnlyHttp11Clients) {
    bound_.script_response("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                           "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    auto c = open_bound();
    c->write(get("/scripted"));
    auto hint = c->read_response();
    ASSERT_TRUE(hint);
    EXPECT_EQ(hint->status, 103);
    EXPECT_NE(hint->head.find("Link: </style.css>; rel=preload"), std::string::npos) << hint->head;
    auto final_response = c->read_response();
    ASSERT_TRUE(final_response);
    EXPECT_EQ(final_response->status, 200);

    auto old = open_bound();
    old->write("GET /scripted HTTP/1.0\r\nHost: " + bound_authority() + "\r\n\r\n");
    auto r = old->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->head;
    EXPECT_EQ(r->body, "ok");
    EXPECT_TRUE(old->closed_by_peer());
}

// An origin that keeps sending 1xx responses is cut off after 32 of them.
TEST_F(MitmTest, EndlessInformationalResponsesEndIn502) {
    std::string script;
    for (int i = 0; i < 40; ++i) script += "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n";
    bound_.script_response(script + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    auto c = open_bound();
    c->write(get("/scripted"));
    int hints = 0;
    std::optional<RawClient::Response> r;
    for (int i = 0; i < 64; ++i) {
        r = c->read_response();
        if (!r || r->status != 103) break;
        ++hints;
    }
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502) << r->head;
    EXPECT_NE(r->body.find("informational"), std::string::npos) << r->body;
    EXPECT_EQ(hints, 32);
    EXPECT_TRUE(c->closed_by_peer());
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"too_many_informational_responses\""));
}

// Every Proxy-* field is for the proxy: none reaches the origin, in any letter
// case or spelled with '_'.
TEST_F(MitmTest, ProxyFieldsAreNeverForwarded) {
    auto c = open_bound();
    c->write(get("/echo", "Proxy-Foo: a\r\nPROXY-STATUS: b\r\nProxy_Authorization: Basic Yjpj\r\n"
                          "Proxy-Authorization: Basic ZDpl\r\nX-Proxy-Kept: f\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    for (const char* name : {"proxy-foo", "proxy-status", "proxy_authorization", "proxy-authorization"})
        EXPECT_TRUE(reqs[0].header_values(name).empty()) << name;
    EXPECT_EQ(reqs[0].header_values("x-proxy-kept"), std::vector<std::string>{"f"});
}

TEST_F(MitmTest, TraceToABoundHostIs405) {
    auto c = open_bound();
    c->write("TRACE /echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(MitmTest, MalformedConnectAuthorityIs400) {
    for (const char* target : {"api.bound.test", "api.bound.test:0443", "api.bound.test:99999", "0x7f.1:443",
                               "[fe80::1%25eth0]:443"}) {
        RawClient c(proxy_->port());
        auto head = c.connect(target);
        EXPECT_EQ(head.rfind("HTTP/1.1 400", 0), 0u) << target << ": " << head;
    }
}

TEST_F(MitmTest, GarbageInsteadOfARequestIs400AndTheProxyStaysUp) {
    {
        RawClient c(proxy_->port());
        auto head = c.send_plain(std::string("\x16\x03\x01\x02\x00garbage\r\n\r\n", 16));
        EXPECT_EQ(head.rfind("HTTP/1.1 400", 0), 0u) << head;
    }
    auto c = open_bound();
    c->write(get("/echo"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace vaultgate::test
