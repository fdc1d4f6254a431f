// A CONNECT tunnel refuses a ClientHello that names another host than the
// CONNECT (domain fronting to a forbidden name on an allowed address), before
// the origin sees a byte of it.
#include "harness.hpp"
#include "test_text.hpp"

#include <gtest/gtest.h>

namespace vaultgate::test {
namespace {

class TunnelHelloTest : public ::testing::Test {
protected:
    TunnelHelloTest()
        : pki_(dir_),
          other_files_(pki_.server_files(dir_, "other.test")),
          other_(other_files_.first, other_files_.second),
          plain_("", "") {}

    void start(const std::string& policy_lines = "") {
        auto yaml = base_config(dir_, pki_, other_.port(), other_.port(), "", policy_lines);
        const std::string allowed = "allowed_domains: [\"other.test:" + std::to_string(other_.port()) + "\"";
        yaml = replace_all(yaml, allowed, allowed + ", \"plain.test:" + std::to_string(plain_.port()) + "\"");
        yaml =
            replace_all(yaml, "    other.test: 127.0.0.1\n", "    other.test: 127.0.0.1\n    plain.test: 127.0.0.1\n");
        proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    }

    // CONNECT to `authority`, then TLS verifying other.test's certificate while the SNI says `sni`.
    bool tunnel_tls(const std::string& authority, const std::string& sni, RawClient& c) {
        const auto head = c.connect(authority);
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        return c.start_tls(pki_.upstream_ca_cert, "other.test", nullptr, sni);
    }

    void expect_echo(RawClient& c) {
        c.write("GET /echo HTTP/1.1\r\nHost: other.test\r\n\r\n");
        auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->body, "ok");
    }

    std::string other_authority() const { return "other.test:" + std::to_string(other_.port()); }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> other_files_;
    RecordingUpstream other_, plain_;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

TEST_F(TunnelHelloTest, AHelloNamingAForbiddenHostIsRefusedBeforeTheOriginSeesIt) {
    start();
    RawClient c(proxy_->port());
    EXPECT_FALSE(tunnel_tls(other_authority(), "forbidden.test", c));
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"sni_mismatch\""));
    const auto log = proxy_->access_log_text();
    EXPECT_NE(log.find("\"ingress\":\"denied\",\"method\":\"CONNECT\",\"host\":\"other.test\""), std::string::npos)
        << log;
    // The origin was dialled before the 200, but not one byte of the hello reached it.
    EXPECT_TRUE(eventually([&] { return other_.connections_ended() == other_.connections(); }));
    EXPECT_EQ(other_.tls_handshakes(), 0u);
    EXPECT_TRUE(other_.raw().empty());
}

TEST_F(TunnelHelloTest, AHelloNamingTheConnectHostIsTunnelled) {
    start();
    RawClient c(proxy_->port());
    // The names compare normalised.
    ASSERT_TRUE(tunnel_tls(other_authority(), "Other.Test.", c));
    expect_echo(c);
    c.close();
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"tunnel\""));
    EXPECT_EQ(proxy_->access_log_text().find("sni_mismatch"), std::string::npos);
}

TEST_F(TunnelHelloTest, WithTheCheckOffAnotherNameIsTunnelled) {
    start("    tunnel_sni_check: false\n");
    RawClient c(proxy_->port());
    ASSERT_TRUE(tunnel_tls(other_authority(), "forbidden.test", c));
    expect_echo(c);
    EXPECT_EQ(other_.tls_handshakes(), 1u);
}

// An IP-literal CONNECT names no host: a hello may name one the policy allows
// there, and no other.
TEST_F(TunnelHelloTest, ThroughAnIpLiteralOnlyAnAllowedNamePasses) {
    start("    allowed_cidrs: [127.0.0.1/32]\n");
    const std::string by_ip = "127.0.0.1:" + std::to_string(other_.port());
    {
        RawClient c(proxy_->port());
        ASSERT_TRUE(tunnel_tls(by_ip, "other.test", c));
        expect_echo(c);
    }
    RawClient c(proxy_->port());
    EXPECT_FALSE(tunnel_tls(by_ip, "wrong.test", c));
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"sni_mismatch\""));
    EXPECT_EQ(other_.tls_handshakes(), 1u);
}

// Bytes that are not TLS go through a checked tunnel as before.
TEST_F(TunnelHelloTest, ATunnelThatCarriesNoTlsIsNotChecked) {
    start();
    RawClient c(proxy_->port());
    const auto head = c.connect("plain.test:" + std::to_string(plain_.port()));
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    c.write("GET /echo HTTP/1.1\r\nHost: plain.test\r\n\r\n");
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "ok");
}

}  // namespace
}  // namespace vaultgate::test
