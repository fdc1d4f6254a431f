// Why a request failed, told everywhere it shows: an upstream that refuses,
// does not answer or fails TLS; a client whose TLS handshake fails; a 407 and
// its cause; a 403 and the policy behind it. Real sockets on loopback; what
// the client got and what the access log says are checked.
#include "blackhole.hpp"
#include "mitm_fixture.hpp"
#include "test_text.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/util/encoding.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <sstream>

namespace vaultgate::test {
namespace {

using nlohmann::json;

class FailureReasonsTest : public MitmTest {
protected:
    // The first access-log line whose `reason` is `reason` (and whose session
    // is `session`, when given), once it is written.
    json log_entry(const std::string& reason, const std::optional<std::string>& session = std::nullopt) {
        json found;
        eventually([&] {
            std::istringstream lines(proxy_->access_log_text());
            for (std::string line; std::getline(lines, line);) {
                auto entry = json::parse(line, nullptr, false);
                if (!entry.is_object() || entry.value("reason", "") != reason) continue;
                if (session && entry.value("session", "") != *session) continue;
                found = entry;
                return true;
            }
            return false;
        });
        return found;
    }

    // The proxy with `from` replaced by `to` in the base config.
    void start_with(const std::string& from, const std::string& to, const std::string& extra_services = "",
                    const std::string& extra_policy = "") {
        proxy_.reset();
        auto yaml = base_config(dir_, pki_, bound_.port(), other_.port(), extra_services, extra_policy);
        proxy_ = std::make_unique<ProxyUnderTest>(replace_all(yaml, from, to));
    }

    std::string bind_service(const std::string& host, std::uint16_t port) const {
        return "      - host: " + host + "\n        port: " + std::to_string(port) +
               "\n        auth: { type: bearer, key: BENCH_KEY }\n";
    }

    // A request on an intercepted connection to `host:port`; the response.
    std::optional<RawClient::Response> mitm_get(const std::string& host, std::uint16_t port) {
        RawClient c(proxy_->port());
        const std::string authority = host + ":" + std::to_string(port);
        auto head = c.connect(authority);
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        EXPECT_TRUE(c.start_tls(pki_.proxy_ca_cert, host));
        c.write("GET /echo HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
        return c.read_response();
    }
};

bool names_reason(const std::string& response, const std::string& reason) {
    return response.find("X-Vaultgate-Reason: " + reason + "\r\n") != std::string::npos &&
           response.find("\"code\":\"" + reason + "\"") != std::string::npos;
}

TEST_F(FailureReasonsTest, AClosedPortIsUpstreamRefusedOnTunnelPlainAndMitmPaths) {
    Blackhole closed("127.0.0.1", 0, false);  // bound, not listening: connects are refused
    ASSERT_TRUE(closed.ok());
    const auto port = std::to_string(closed.port());
    start_proxy(bind_service("wrong.test", closed.port()),
                "    allow_http: true\n    allowed_cidrs: [\"127.0.0.1/32\"]\n");

    RawClient tunnel(proxy_->port());
    const auto connect = tunnel.connect("127.0.0.1:" + port);
    EXPECT_EQ(connect.rfind("HTTP/1.1 502", 0), 0u) << connect;
    EXPECT_TRUE(names_reason(connect, "upstream_refused")) << connect;
    auto line = log_entry("upstream_refused");
    EXPECT_EQ(line.value("ingress", ""), "tunnel");
    EXPECT_EQ(line.value("status", 0), 502);

    RawClient plain(proxy_->port());
    const auto answer = plain.send_plain("GET http://127.0.0.1:" + port + "/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    EXPECT_EQ(answer.rfind("HTTP/1.1 502", 0), 0u) << answer;
    EXPECT_TRUE(names_reason(answer, "upstream_refused")) << answer;

    auto r = mitm_get("wrong.test", closed.port());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    EXPECT_TRUE(names_reason(r->head + r->body, "upstream_refused")) << r->head << r->body;
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"mitm\",\"method\":\"GET\",\"host\":\"wrong.test\""));
}

TEST_F(FailureReasonsTest, AnOriginThatNeverAcceptsIsUpstreamTimeout) {
    Blackhole silent("127.0.0.1", 0);
    ASSERT_TRUE(silent.ok());
    start_with("limits:\n", "limits:\n  connect_timeout: 1s\n", "", "    allowed_cidrs: [\"127.0.0.1/32\"]\n");
    RawClient c(proxy_->port());
    const auto head = c.connect("127.0.0.1:" + std::to_string(silent.port()));
    EXPECT_EQ(head.rfind("HTTP/1.1 504", 0), 0u) << head;
    EXPECT_TRUE(names_reason(head, "upstream_timeout")) << head;
    auto line = log_entry("upstream_timeout");
    EXPECT_EQ(line.value("ingress", ""), "tunnel");
    EXPECT_EQ(line.value("status", 0), 504);
    EXPECT_EQ(line.value("host", ""), "127.0.0.1");
}

TEST_F(FailureReasonsTest, UpstreamTlsFailuresHaveTheirOwnReasons) {
    // A bound origin whose certificate no CA of upstream.ca_file signed.
    auto rogue_files = pki_.server_files(dir_, "rogue.test", true);
    RecordingUpstream rogue(rogue_files.first, rogue_files.second);
    // A bound origin that closes every connection at once: the handshake fails without a certificate.
    CanaryListener closing_origin;
    start_proxy(bind_service("rogue.test", rogue.port()) + bind_service("wrong.test", closing_origin.port()));

    auto untrusted = mitm_get("rogue.test", rogue.port());
    ASSERT_TRUE(untrusted);
    EXPECT_EQ(untrusted->status, 502);
    EXPECT_TRUE(names_reason(untrusted->head + untrusted->body, "upstream_tls_failed")) << untrusted->head;
    EXPECT_NE(untrusted->body.find("did not verify"), std::string::npos) << untrusted->body;

    auto no_tls = mitm_get("wrong.test", closing_origin.port());
    ASSERT_TRUE(no_tls);
    EXPECT_EQ(no_tls->status, 502);
    EXPECT_TRUE(names_reason(no_tls->head + no_tls->body, "upstream_handshake_failed")) << no_tls->head;
    EXPECT_EQ(log_entry("upstream_handshake_failed").value("host", ""), "wrong.test");
    EXPECT_EQ(log_entry("upstream_tls_failed").value("host", ""), "rogue.test");
    EXPECT_EQ(rogue.raw(), "");
}

TEST_F(FailureReasonsTest, AClientThatDoesNotTrustTheCaLeavesAnAccessLogLine) {
    const auto res =
        run_command({"curl", "-sS", "--max-time", "20", "-x", "http://127.0.0.1:" + std::to_string(proxy_->port()),
                     "https://" + bound_authority() + "/echo"});
    EXPECT_NE(res.exit_code, 0);  // curl refuses the proxy's certificate
    auto line = log_entry("client_tls_unknown_ca");
    EXPECT_EQ(line.value("ingress", ""), "mitm");
    EXPECT_EQ(line.value("method", ""), "TLS");
    EXPECT_EQ(line.value("session", ""), "default");
    EXPECT_EQ(line.value("host", ""), "api.bound.test");
    EXPECT_EQ(line.value("port", 0), bound_.port());
    EXPECT_EQ(line.value("status", -1), 0);
    EXPECT_EQ(bound_.connections(), 0u);
}

TEST_F(FailureReasonsTest, AClientThatClosesOrStallsInTheHandshakeIsLogged) {
    {
        RawClient c(proxy_->port());
        ASSERT_EQ(c.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
        c.close();
    }
    EXPECT_EQ(log_entry("client_tls_closed").value("host", ""), "api.bound.test");
    RawClient stalled(proxy_->port());
    ASSERT_EQ(stalled.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
    stalled.write("\x16\x03\x01");               // the start of a record, never finished
    EXPECT_TRUE(stalled.closed_by_peer(10000));  // limits.handshake_timeout is 3 s
    EXPECT_EQ(log_entry("handshake_timeout").value("session", ""), "default");
}

class SessionReasonsTest : public FailureReasonsTest {
protected:
    void SetUp() override {
        FailureReasonsTest::SetUp();
        auto state = std::make_shared<GatewayState>(*proxy_->server().state());
        const auto policy = state->sessions.at("default").policy;
        const auto now = std::chrono::system_clock::now();
        add(*state, "ses_live", policy, std::nullopt, std::nullopt);
        add(*state, "ses_pinned", policy, std::nullopt, parse_cidr("10.99.0.0/16"));
        add(*state, "ses_lapsed", policy, now - std::chrono::seconds(5), std::nullopt);
        add(*state, "ses_deleted", policy, now + std::chrono::hours(1), std::nullopt);
        add(*state, "ses_swept", policy, now - std::chrono::seconds(5), std::nullopt);
        state->default_session.reset();  // a request without credentials is refused
        proxy_->server().replace_state(state);
        // The admin API deletes one; the expiry sweep drops another.
        auto next = std::make_shared<GatewayState>(*state);
        next->sessions.erase("ses_deleted");
        next->sessions.erase("ses_swept");
        proxy_->server().replace_state(next);
    }

    static void add(GatewayState& state, const std::string& id, const EgressPolicy& policy,
                    std::optional<std::chrono::system_clock::time_point> expires, std::optional<Cidr> source) {
        Session s;
        s.id = id;
        s.vault_names = {"bench"};
        s.policy = policy;
        s.token_digest = token_digest("token-of-" + id);
        s.expires_at = expires;
        s.source = source;
        state.sessions.emplace(id, s);
    }

    static std::string auth(const std::string& id, const std::string& token) {
        return "Proxy-Authorization: Basic " + base64_encode(id + ":" + token, Base64Alphabet::standard, true) + "\r\n";
    }

    // The whole answer (head and body) to a CONNECT with `header`.
    std::string refused(const std::string& header) {
        RawClient c(proxy_->port());
        return c.connect(bound_authority(), header);
    }
};

TEST_F(SessionReasonsTest, Each407SaysWhyInTheLogAndTheSameToEveryClient) {
    struct Case {
        std::string header;
        const char* reason;
        const char* logged_session;
    };
    const Case cases[] = {
        {auth("ses_nobody", "whatever"), "session_unknown", "ses_nobody"},
        {auth("ses_live", "wrong-token"), "session_bad_token", "ses_live"},
        {auth("ses_lapsed", "token-of-ses_lapsed"), "session_expired", "ses_lapsed"},
        {auth("ses_swept", "token-of-ses_swept"), "session_expired", "ses_swept"},
        {auth("ses_deleted", "token-of-ses_deleted"), "session_revoked", "ses_deleted"},
        {auth("ses_pinned", "token-of-ses_pinned"), "session_source_mismatch", "ses_pinned"},
        // Not the shape of a session id: whatever it is, it is not logged.
        {auth("sk-pasted-secret", "x"), "session_unknown", ""},
        {"Proxy-Authorization: Bearer abc\r\n", "session_bad_header", ""},
    };
    std::string first_answer;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.reason);
        const auto answer = refused(c.header);
        EXPECT_EQ(answer.rfind("HTTP/1.1 407", 0), 0u) << answer;
        if (first_answer.empty()) first_answer = answer;
        EXPECT_EQ(answer, first_answer);  // nothing tells an unknown id from a known one
        const auto line = log_entry(c.reason, c.logged_session);
        EXPECT_EQ(line.value("ingress", ""), "denied") << line;
        EXPECT_EQ(line.value("method", ""), "CONNECT") << line;
        EXPECT_EQ(line.value("host", ""), "api.bound.test") << line;
        EXPECT_EQ(line.value("port", 0), bound_.port()) << line;
        EXPECT_EQ(line.value("status", 0), 407) << line;
    }
    EXPECT_NE(first_answer.find("not accepted"), std::string::npos) << first_answer;
    EXPECT_EQ(proxy_->access_log_text().find("sk-pasted-secret"), std::string::npos);

    const auto missing = refused("");
    EXPECT_EQ(missing.rfind("HTTP/1.1 407", 0), 0u) << missing;
    EXPECT_NE(missing.find("needs Proxy-Authorization"), std::string::npos) << missing;
    EXPECT_EQ(log_entry("session_missing").value("host", ""), "api.bound.test");

    // The one that works still does.
    RawClient ok(proxy_->port());
    EXPECT_EQ(ok.connect(bound_authority(), auth("ses_live", "token-of-ses_live")).rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(FailureReasonsTest, A403NamesThePolicyAndTheRuleThatRefused) {
    RawClient named(proxy_->port());
    const auto answer = named.connect("denied.test:443");
    EXPECT_EQ(answer.rfind("HTTP/1.1 403", 0), 0u) << answer;
    EXPECT_NE(answer.find("\"policy\":\"test\",\"rule\":\"allowed_domains\""), std::string::npos) << answer;
    EXPECT_NE(answer.find("Refused by egress policy 'test' (allowed_domains)"), std::string::npos) << answer;
    EXPECT_NE(answer.find("to egress_policies.test.allowed_domains"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("<policy>"), std::string::npos) << answer;

    // A session's own policy (given inline through the admin API) has no name.
    auto state = std::make_shared<GatewayState>(*proxy_->server().state());
    state->sessions.at("default").policy.name.clear();
    state->sessions.at("default").policy.allow_http = false;
    proxy_->server().replace_state(state);
    RawClient inline_policy(proxy_->port());
    const std::string other = "other.test:" + std::to_string(other_.port());
    const auto plain = inline_policy.send_plain("GET http://" + other + "/ HTTP/1.1\r\nHost: " + other + "\r\n\r\n");
    EXPECT_EQ(plain.rfind("HTTP/1.1 403", 0), 0u) << plain;
    EXPECT_NE(plain.find("\"policy\":\"inline\",\"rule\":\"allow_http\""), std::string::npos) << plain;
    EXPECT_NE(plain.find("the session's inline egress_policy.allow_http"), std::string::npos) << plain;
}

}  // namespace
}  // namespace vaultgate::test
