// The egress policy on a live proxy: what untrusted code tries to reach, and
// proof (canary listeners) that refused targets never saw a connection.
#include "harness.hpp"
#include "test_text.hpp"
#include "vaultgate/crypto/digest.hpp"

#include <gtest/gtest.h>

namespace vaultgate::test {
namespace {

class EgressTest : public ::testing::Test {
protected:
    EgressTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          other_files_(pki_.server_files(dir_, "other.test")),
          bound_(bound_files_.first, bound_files_.second),
          other_(other_files_.first, other_files_.second, "127.0.0.2") {}

    // `domains` are added to the policy's allowed_domains, as YAML list items.
    void start(const std::string& policy_lines, const std::string& proxy_port = "0",
               const std::string& admin_port = "0", const std::string& resolve_lines = "",
               const std::string& domains = "", const std::string& transparent_port = "") {
        auto yaml = add_domains(base_config(dir_, pki_, bound_.port(), other_.port(), "", policy_lines), domains);
        yaml = replace_all(yaml, "proxy: 127.0.0.1:0", "proxy: 127.0.0.1:" + proxy_port);
        yaml = replace_all(yaml, "admin: 127.0.0.1:0", "admin: 127.0.0.1:" + admin_port);
        if (!transparent_port.empty())
            yaml = replace_all(yaml, "ca:\n", "  transparent: 127.0.0.1:" + transparent_port + "\nca:\n");
        yaml = replace_all(yaml, "    other.test: 127.0.0.1\n", "    other.test: 127.0.0.2\n" + resolve_lines);
        proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    }

    void TearDown() override { EXPECT_EQ(stop_and_read_access_log(proxy_).find(test_secret), std::string::npos); }

    std::string add_domains(const std::string& yaml, const std::string& domains) const {
        if (domains.empty()) return yaml;
        auto base = "allowed_domains: [\"other.test:" + std::to_string(other_.port()) + "\"";
        return replace_all(yaml, base, base + ", " + domains);
    }

    std::string connect(const std::string& authority) {
        RawClient c(proxy_->port());
        return c.connect(authority);
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_, other_files_;
    RecordingUpstream bound_, other_;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

bool has_reason(const std::string& response, const std::string& reason) {
    return response.find("X-Vaultgate-Reason: " + reason + "\r\n") != std::string::npos &&
           response.find("\"reason\":\"" + reason + "\"") != std::string::npos;
}

TEST_F(EgressTest, NameThatReallyResolvesToLoopbackIsRefusedBeforeAnySyn) {
    CanaryListener canary;
    start("", "0", "0", "", "\"localhost:" + std::to_string(canary.port()) + "\"");
    auto head = connect("localhost:" + std::to_string(canary.port()));
    EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << head;
    EXPECT_TRUE(has_reason(head, "loopback_address")) << head;
    EXPECT_EQ(canary.accepted(), 0u);
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"loopback_address\""));
}

TEST_F(EgressTest, IpLiteralOutsideAllowedCidrsIsRefused) {
    CanaryListener canary;
    start("");
    for (auto target : {"127.0.0.1:" + std::to_string(canary.port()), std::string("169.254.169.254:80"),
                        std::string("[::1]:") + std::to_string(canary.port()), std::string("10.0.0.1:443")}) {
        auto head = connect(target);
        EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << target << head;
        EXPECT_TRUE(has_reason(head, "ip_literal_not_allowed")) << target << head;
    }
    EXPECT_EQ(canary.accepted(), 0u);
}

TEST_F(EgressTest, NonCanonicalIpFormsAre400NotResolved) {
    start("");
    for (const char* target :
         {"2130706433:443", "0x7f.0.0.1:443", "0177.0.0.1:443", "127.1:443", "0xa9fea9fe:80", "169.16689662:80"}) {
        auto head = connect(target);
        EXPECT_EQ(head.rfind("HTTP/1.1 400", 0), 0u) << target << head;
    }
}

TEST_F(EgressTest, CidrAllowedLiteralIsTunnelled) {
    start("    allowed_cidrs: [127.0.0.2/32]\n");
    RawClient c(proxy_->port());
    auto head = c.connect("127.0.0.2:" + std::to_string(other_.port()));
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    // The tunnel carries TLS straight to other.test's own certificate.
    ASSERT_TRUE(c.start_tls(pki_.upstream_ca_cert, "other.test"));
    c.write("GET /echo HTTP/1.1\r\nHost: other.test\r\n\r\n");
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "ok");
    EXPECT_EQ(other_.requests().size(), 1u);
}

TEST_F(EgressTest, OwnProxyPortIsRefusedByIpAndByNameEvenWhenAllowed) {
    auto proxy_port = free_port();
    auto admin_port = free_port();
    start("    allowed_cidrs: [127.0.0.0/8]\n", std::to_string(proxy_port), std::to_string(admin_port),
          "    self.test: 127.0.0.1\n",
          "\"self.test:" + std::to_string(proxy_port) + "\", \"self.test:" + std::to_string(admin_port) + "\"");
    for (auto port : {proxy_port, admin_port}) {
        auto by_ip = connect("127.0.0.1:" + std::to_string(port));
        EXPECT_TRUE(has_reason(by_ip, "self_connection")) << by_ip;
        auto by_name = connect("self.test:" + std::to_string(port));
        EXPECT_TRUE(has_reason(by_name, "self_connection")) << by_name;
    }
}

// 0.0.0.0 and :: reach the local host, so with every address allowed they
// would reach a listener bound to 127.0.0.1 (the IPv6 forms are refused all the
// same, whatever the family of the listener).
TEST_F(EgressTest, UnspecifiedAddressOfAnOwnPortIsRefusedEvenWhenAllowed) {
    const auto proxy_port = free_port(), admin_port = free_port(), transparent_port = free_port();
    start("    allowed_cidrs: [0.0.0.0/0, \"::/0\"]\n", std::to_string(proxy_port), std::to_string(admin_port), "", "",
          std::to_string(transparent_port));
    for (auto port : {proxy_port, admin_port, transparent_port}) {
        for (const std::string host : {"0.0.0.0", "[::ffff:0.0.0.0]", "[::]", "[::ffff:127.0.0.1]"}) {
            const auto target = host + ":" + std::to_string(port);
            auto head = connect(target);
            EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << target << head;
            EXPECT_TRUE(has_reason(head, "self_connection")) << target << head;
        }
    }
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"self_connection\""));
}

TEST_F(EgressTest, NamePinnedToAnUnspecifiedAddressOfAnOwnPortIsRefused) {
    const auto proxy_port = free_port();
    const auto port = std::to_string(proxy_port);
    start("", port, "0", "    zero.test: 0.0.0.0\n    zero6.test: \"::\"\n    zerom.test: ::ffff:0.0.0.0\n",
          "\"zero.test:" + port + "\", \"zero6.test:" + port + "\", \"zerom.test:" + port + "\"");
    for (const std::string name : {"zero.test", "zero6.test", "zerom.test"}) {
        auto head = connect(name + ":" + port);
        EXPECT_EQ(head.rfind("HTTP/1.1 403", 0), 0u) << name << head;
        EXPECT_TRUE(has_reason(head, "self_connection")) << name << head;
    }
}

// The whole loop: a session without the vault tunnels to the proxy itself and
// asks there, without credentials, for the bound host, which the listener's
// default session would inject into. It must end at the first step.
TEST_F(EgressTest, LoopThroughTheProxyNeverReachesTheDefaultSessionsVault) {
    const auto proxy_port = free_port();
    start("    allowed_cidrs: [0.0.0.0/0, \"::/0\"]\n", std::to_string(proxy_port));
    auto state = std::make_shared<GatewayState>(*proxy_->server().state());
    Session sandbox;
    sandbox.id = "ses_sandbox";
    sandbox.token_digest = token_digest("sandbox-token");
    sandbox.policy = state->sessions.at("default").policy;
    state->sessions.emplace(sandbox.id, sandbox);
    proxy_->server().replace_state(state);
    const std::string auth = "Proxy-Authorization: Basic " +
                             base64_encode("ses_sandbox:sandbox-token", Base64Alphabet::standard, true) + "\r\n";

    for (const std::string host : {"0.0.0.0", "[::ffff:0.0.0.0]", "[::]"}) {
        SCOPED_TRACE(host);
        RawClient c(proxy_->port());
        auto outer = c.connect(host + ":" + std::to_string(proxy_port), auth);
        EXPECT_TRUE(has_reason(outer, "self_connection")) << outer;
        if (outer.rfind("HTTP/1.1 200", 0) != 0) continue;
        // Inside the tunnel: the proxy again, asked as the default session.
        auto inner = c.connect("api.bound.test:" + std::to_string(bound_.port()));
        EXPECT_TRUE(has_reason(inner, "self_connection")) << inner;
        if (inner.rfind("HTTP/1.1 200", 0) != 0) continue;
        std::string error;
        ASSERT_TRUE(c.start_tls(pki_.proxy_ca_cert, "api.bound.test", &error)) << error;
        c.write("GET /echo HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) + "\r\n\r\n");
        auto r = c.read_response();
        EXPECT_FALSE(r && r->status == 200) << (r ? r->head + r->body : std::string());
    }
    EXPECT_EQ(bound_.connections(), 0u);
    EXPECT_TRUE(bound_.requests().empty());
}

TEST_F(EgressTest, AllowedNameWithAnotherPortIsRefused) {
    start("");
    auto head = connect("other.test:" + std::to_string(other_.port() == 1 ? 2 : other_.port() - 1));
    EXPECT_TRUE(has_reason(head, "port_not_allowed")) << head;
}

TEST_F(EgressTest, SuffixConfusionIsRefused) {
    start("", "0", "0", "", "\"*.example.com\"");
    for (const char* target : {"example.com:443", "evilexample.com:443", "api.example.com.evil.com:443"}) {
        auto head = connect(target);
        EXPECT_TRUE(has_reason(head, "domain_not_allowed")) << target << head;
    }
}

TEST_F(EgressTest, DenialBodyNamesTheConfigKeyThatWouldAllowIt) {
    start("");
    auto head = connect("nope.test:443");
    EXPECT_NE(head.find("allowed_domains"), std::string::npos) << head;
    EXPECT_NE(head.find("\"destination\":\"nope.test:443\""), std::string::npos) << head;
}

class PlainHttpTest : public EgressTest {
protected:
    PlainHttpTest() : plain_("", "") {}
    RecordingUpstream plain_;
};

TEST_F(PlainHttpTest, RefusedWithoutAllowHttp) {
    start("", "0", "0", "    plain.test: 127.0.0.1\n", "\"plain.test:" + std::to_string(plain_.port()) + "\"");
    RawClient c(proxy_->port());
    auto resp = c.send_plain("GET http://plain.test:" + std::to_string(plain_.port()) +
                             "/echo HTTP/1.1\r\nHost: plain.test\r\n\r\n");
    EXPECT_EQ(resp.rfind("HTTP/1.1 403", 0), 0u) << resp;
    EXPECT_TRUE(has_reason(resp, "http_not_allowed")) << resp;
    EXPECT_EQ(plain_.connections(), 0u);
}

TEST_F(PlainHttpTest, AbsoluteFormToAnOwnPortIsRefusedEvenWhenAllowed) {
    const auto port = std::to_string(free_port());
    start("    allow_http: true\n    allowed_cidrs: [0.0.0.0/0, \"::/0\"]\n", port);
    for (const std::string host : {"0.0.0.0", "[::ffff:0.0.0.0]", "[::]"}) {
        RawClient c(proxy_->port());
        auto resp = c.send_plain("GET http://" + host + ":" + port + "/echo HTTP/1.1\r\nHost: " + host + ":" + port +
                                 "\r\n\r\n");
        EXPECT_EQ(resp.rfind("HTTP/1.1 403", 0), 0u) << host << resp;
        EXPECT_TRUE(has_reason(resp, "self_connection")) << host << resp;
    }
}

TEST_F(PlainHttpTest, ForwardedWhenAllowedAndNeverInjected) {
    // plain.test is also a bound host for https: over plain http it must still get no secret.
    auto yaml = add_domains(base_config(dir_, pki_, bound_.port(), other_.port(),
                                        "      - host: plain.test\n        port: " + std::to_string(plain_.port()) +
                                            "\n        auth: { type: api-key, key: BENCH_KEY }\n",
                                        "    allow_http: true\n"),
                            "\"plain.test:" + std::to_string(plain_.port()) + "\"");
    yaml = replace_all(yaml, "    other.test: 127.0.0.1\n", "    other.test: 127.0.0.1\n    plain.test: 127.0.0.1\n");
    proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    auto res =
        run_command({"curl", "-sS", "--max-time", "20", "-x", "http://127.0.0.1:" + std::to_string(proxy_->port()),
                     "-H", "x-api-key: placeholder", "-H", "Proxy-Connection: keep-alive", "-H", "Proxy-Foo: bar",
                     "http://plain.test:" + std::to_string(plain_.port()) + "/echo?q=1"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(res.out, "ok");
    auto reqs = plain_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].target, "/echo?q=1");
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{"placeholder"});
    EXPECT_TRUE(reqs[0].header_values("proxy-connection").empty());
    EXPECT_TRUE(reqs[0].header_values("proxy-foo").empty());
    EXPECT_EQ(plain_.raw().find(test_secret), std::string::npos);
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"http\""));
    // The query string never reaches the log.
    EXPECT_EQ(proxy_->access_log_text().find("q=1"), std::string::npos);
}

TEST_F(PlainHttpTest, UnreachableOriginIs502AndTheProxyStaysUp) {
    const auto port = std::to_string(free_port());  // nothing listens there
    start("    allow_http: true\n    allowed_cidrs: [\"::1/128\"]\n", "0", "0", "    dead.test: 127.0.0.1\n",
          "\"dead.test:" + port + "\"");
    // By name (resolved) and by IP literal: both dial paths end in the same reply.
    for (const auto& authority : {"dead.test:" + port, "[::1]:" + port}) {
        RawClient c(proxy_->port());
        auto resp = c.send_plain("GET http://" + authority + "/ HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
        EXPECT_EQ(resp.rfind("HTTP/1.1 502", 0), 0u) << authority << ": " << resp;
        // Nothing listens there: the connection is refused, and the answer says so.
        EXPECT_NE(resp.find("upstream_refused"), std::string::npos) << resp;
    }
}

TEST_F(PlainHttpTest, OriginFormRequestToTheProxyIs400) {
    start("");
    RawClient c(proxy_->port());
    auto resp = c.send_plain("GET /echo HTTP/1.1\r\nHost: plain.test\r\n\r\n");
    EXPECT_EQ(resp.rfind("HTTP/1.1 400", 0), 0u) << resp;
}

// A request line the proxy cannot parse is answered and logged, with nothing
// of what the client sent (it may carry a secret).
TEST_F(PlainHttpTest, AMalformedRequestLineIsLoggedWithoutItsBytes) {
    start("");
    RawClient c(proxy_->port());
    const auto resp = c.send_plain("G@RBAGE secret-looking-token\r\n\r\n");
    EXPECT_EQ(resp.rfind("HTTP/1.1 400", 0), 0u) << resp;
    ASSERT_TRUE(proxy_->wait_for_log("\"reason\":\"malformed_request\""));
    const auto log = proxy_->access_log_text();
    EXPECT_NE(log.find("\"ingress\":\"denied\",\"method\":\"-\",\"host\":\"\",\"port\":0,\"path\":\"\",\"status\":400"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("secret-looking-token"), std::string::npos) << log;
    EXPECT_EQ(log.find("RBAGE"), std::string::npos) << log;

    // A well-formed line whose target is no proxy request, or names no valid host.
    for (const char* line : {"GET /echo?key=secret-in-target HTTP/1.1\r\nHost: plain.test\r\n\r\n",
                             "GET http://secret-in-host..test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n"}) {
        RawClient other(proxy_->port());
        const auto answer = other.send_plain(line);
        EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
    }
    EXPECT_TRUE(eventually([&] {
        const auto text = proxy_->access_log_text();
        std::size_t lines = 0;
        for (std::size_t pos = 0; (pos = text.find("\"reason\":\"malformed_request\"", pos)) != std::string::npos;
             ++pos)
            ++lines;
        return lines == 3;
    })) << proxy_->access_log_text();
    EXPECT_EQ(proxy_->access_log_text().find("secret-in"), std::string::npos);
}

}  // namespace
}  // namespace vaultgate::test
