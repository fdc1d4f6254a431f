// The MITM path end to end: which requests are refused before anything
// reaches the origin (CONNECT decisions, Host and target checks, smuggling
// vectors, methods).
#include "mitm_fixture.hpp"

namespace vaultgate::test {
namespace {

TEST_F(MitmTest, AllowedHostIsTunnelledWithItsOwnCertificateAndThePlaceholder) {
    // Trusting only the upstream CA proves the client saw other.test's own certificate.
    auto res =
        run_command({"curl", "-sS", "--max-time", "20", "--proxy", "http://127.0.0.1:" + std::to_string(proxy_->port()),
                     "--cacert", pki_.upstream_ca_cert, "-H", "x-api-key: placeholder",
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
    auto head = c.send_plain(
        "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n"
        "CONNECT other.test:" +
        std::to_string(other_.port()) + " HTTP/1.1\r\n\r\n");
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
    c->write("GET https://other.test:" + std::to_string(other_.port()) +
             "/echo HTTP/1.1\r\nHost: " + bound_authority() + "\r\n\r\n");
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
        SmugglingCase{"cl_and_te",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 4\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nsmuggled"},
        SmugglingCase{"te_xchunked", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: xchunked\r\n\r\n"},
        SmugglingCase{"te_list", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"},
        SmugglingCase{"te_twice",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        SmugglingCase{"te_space_before_colon",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding : chunked\r\n\r\n"},
        SmugglingCase{"te_on_http10",
                      "POST /echo HTTP/1.0\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        SmugglingCase{"two_content_lengths",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 3\r\n"
                      "Content-Length: 4\r\n\r\nsmug"},
        SmugglingCase{"content_length_list", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 4, 4\r\n\r\nsmug"},
        SmugglingCase{"content_length_plus", "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: +4\r\n\r\nsmug"},
        SmugglingCase{"bad_chunk_size",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "zz\r\nsmuggled\r\n0\r\n\r\n"},
        SmugglingCase{"chunk_size_0x",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "0x5\r\nhello\r\n0\r\n\r\n"},
        SmugglingCase{"chunk_size_overflow",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "fffffffffffffffff1\r\nsmuggled\r\n0\r\n\r\n"},
        SmugglingCase{"chunk_bare_lf",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\nhello\r\n0\r\n\r\n"},
        SmugglingCase{"obs_fold", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX-Folded: a\r\n b\r\n\r\n"},
        SmugglingCase{"bare_lf_header", "GET /echo HTTP/1.1\r\nHost: {HOST}\nX-A: b\r\n\r\n"},
        SmugglingCase{"bare_cr_header", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX-A: b\rc\r\n\r\n"},
        SmugglingCase{"nul_in_header", with_nul("GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX-A: b\0c\r\n\r\n")},
        SmugglingCase{"two_hosts", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nHost: {HOST}\r\n\r\n"},
        SmugglingCase{"empty_host", "GET /echo HTTP/1.1\r\nHost: \r\n\r\n"},
        SmugglingCase{"bad_header_name", "GET /echo HTTP/1.1\r\nHost: {HOST}\r\nX A: b\r\n\r\n"},
        SmugglingCase{"trailer_content_length",
                      "POST /echo HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n"}),
    [](const auto& info) { return std::string(info.param.name); });

// Every Proxy-* field is for the proxy: none reaches the origin, in any letter
// case or spelled with '_'.
TEST_F(MitmTest, ProxyFieldsAreNeverForwarded) {
    auto c = open_bound();
    c->write(get("/echo",
                 "Proxy-Foo: a\r\nPROXY-STATUS: b\r\nProxy_Authorization: Basic Yjpj\r\n"
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
    for (const char* target :
         {"api.bound.test", "api.bound.test:0443", "api.bound.test:99999", "0x7f.1:443", "[fe80::1%25eth0]:443"}) {
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
