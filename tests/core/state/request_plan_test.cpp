#include "vaultgate/state/request_plan.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

using test::ScopedEnv;

const std::string plan_yaml = R"(
vaults:
  - name: one
    credentials:
      K: { env: VG_TEST_PLAN_KEY }
      GONE: { env: VG_TEST_PLAN_UNSET }
    services:
      - host: api.example.com
        path_prefix: /api
        auth: { type: bearer, key: K }
      - host: nokey.example.com
        auth: { type: bearer, key: GONE }
egress_policies:
  web:
    allow_http: true
    allowed_domains: [plain.example.com]
sessions:
  default: { vaults: [one], egress_policy: web }
)";

class RequestPlanTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::vector<std::string> warnings;
        state_ = build_state(parse_config(plan_yaml, "plan.yaml"), warnings);
    }

    static RequestHead head(const std::string& text) {
        RequestHead req;
        const auto parsed = parse_request_head(text, HeadLimits{}, req);
        if (parsed.status != ParseStatus::complete) throw std::runtime_error("test head does not parse");
        return req;
    }

    Decision bound(const std::string& text, const char* host = "api.example.com") {
        return decide_bound_request(*state_, "default", Authority{host, 443, HostKind::name}, head(text),
                                    std::chrono::system_clock::now());
    }

    ScopedEnv key_{"VG_TEST_PLAN_KEY", "sk-plan-secret"};
    ScopedEnv unset_{"VG_TEST_PLAN_UNSET", nullptr};
    std::shared_ptr<const GatewayState> state_;
};

TEST_F(RequestPlanTest, ACoveredPathIsPlannedWithItsBindingAndAnEndToEndHead) {
    auto d = bound(
        "POST https://api.example.com/api/x?q=1 HTTP/1.1\r\nHost: api.example.com\r\n"
        "Proxy-Authorization: Basic eDp5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"
        "Content-Length: 3\r\nExpect: 100-continue\r\n\r\n");
    ASSERT_FALSE(d.refusal);
    const RequestPlan& plan = d.plan;
    ASSERT_TRUE(plan.binding);
    EXPECT_EQ(plan.binding->vault->name, "one");
    EXPECT_EQ(plan.session, state_->find_session("default"));
    EXPECT_EQ(plan.summary.method, "POST");
    EXPECT_EQ(plan.summary.target, "https://api.example.com/api/x?q=1");
    EXPECT_EQ(plan.outgoing.target, "/api/x?q=1");
    ASSERT_FALSE(plan.outgoing.headers.empty());
    EXPECT_EQ(plan.outgoing.headers.front().name, "Host");
    EXPECT_EQ(plan.outgoing.headers.front().value, "api.example.com");
    EXPECT_FALSE(plan.outgoing.get("proxy-authorization"));
    EXPECT_FALSE(plan.outgoing.get("x-hop"));
    EXPECT_FALSE(plan.outgoing.get("expect"));
    EXPECT_EQ(plan.outgoing.get("content-length"), "3");
    EXPECT_TRUE(plan.expect_continue);
    EXPECT_FALSE(plan.client_close);
    EXPECT_EQ(plan.framing.kind, BodyKind::content_length);
}

TEST_F(RequestPlanTest, APlainPathOutsideEveryPrefixGoesWithoutACredential) {
    auto d = bound("GET /public HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n");
    ASSERT_FALSE(d.refusal);
    EXPECT_FALSE(d.plan.binding);
    EXPECT_TRUE(d.plan.client_close);
}

TEST_F(RequestPlanTest, HostAndTargetChecksRefuseWithTheirCodes) {
    auto other = bound("GET / HTTP/1.1\r\nHost: evil.example.com\r\n\r\n");
    EXPECT_EQ(other.refusal.status, 421);
    EXPECT_EQ(other.refusal.code, "misdirected_request");
    EXPECT_EQ(other.refusal.reason, "misdirected_request");
    EXPECT_EQ(other.refusal.form, Refusal::Form::error);
    EXPECT_TRUE(other.refusal.close);
    EXPECT_TRUE(other.refusal.logged);
    EXPECT_EQ(other.plan.summary.target, "/");  // the log line still names the request

    // HTTP/1.1 without Host is a framing error; HTTP/1.0 reaches the Host check.
    EXPECT_EQ(bound("GET / HTTP/1.1\r\nX: y\r\n\r\n").refusal.code, "bad_framing");
    EXPECT_EQ(bound("GET / HTTP/1.0\r\nX: y\r\n\r\n").refusal.code, "missing_host");
    EXPECT_EQ(bound("TRACE / HTTP/1.1\r\nHost: api.example.com\r\n\r\n").refusal.status, 405);
    EXPECT_EQ(bound("GET * HTTP/1.1\r\nHost: api.example.com\r\n\r\n").refusal.code, "bad_target");
}

TEST_F(RequestPlanTest, AGoneSessionGetsTheProxyAuthForm) {
    auto d = decide_bound_request(*state_, "no-such-session", Authority{"api.example.com", 443, HostKind::name},
                                  head("GET /api HTTP/1.1\r\nHost: api.example.com\r\n\r\n"),
                                  std::chrono::system_clock::now());
    EXPECT_EQ(d.refusal.status, 407);
    EXPECT_EQ(d.refusal.form, Refusal::Form::proxy_auth);
    EXPECT_EQ(d.refusal.reason, "session_gone");
}

TEST_F(RequestPlanTest, ADenialNamesThePolicyThatRefused) {
    auto unclear = bound("GET /x;a=b HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
    EXPECT_EQ(unclear.refusal.policy, "web");
    EgressPolicy own;  // given inline: no name
    EXPECT_EQ(denial(DenyReason::domain_not_allowed, &own).policy, "inline");
    EXPECT_EQ(denial(DenyReason::self_connection).policy, "");
}

TEST_F(RequestPlanTest, A407OnlySaysWhetherCredentialsWereMissing) {
    const auto missing = proxy_auth_refusal("session_missing");
    EXPECT_NE(missing.message.find("needs Proxy-Authorization"), std::string::npos);
    for (const char* reason : {"session_unknown", "session_revoked", "session_expired", "session_bad_token",
                               "session_source_mismatch", "session_gone"}) {
        const auto r = proxy_auth_refusal(reason);
        EXPECT_EQ(r.reason, reason);
        EXPECT_EQ(r.message, "the Proxy-Authorization credentials were not accepted") << reason;
    }
}

TEST_F(RequestPlanTest, AnUnclearPathIsDeniedAndAMissingCredentialNamesItsBinding) {
    auto unclear = bound("GET /x;a=b HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
    EXPECT_EQ(unclear.refusal.status, 403);
    EXPECT_EQ(unclear.refusal.form, Refusal::Form::denied);
    EXPECT_EQ(unclear.refusal.deny, DenyReason::path_not_covered);
    EXPECT_EQ(unclear.refusal.reason, "path_not_covered");

    auto missing = bound("GET / HTTP/1.1\r\nHost: nokey.example.com\r\n\r\n", "nokey.example.com");
    EXPECT_EQ(missing.refusal.status, 503);
    EXPECT_EQ(missing.refusal.code, "credential_missing");
    ASSERT_TRUE(missing.plan.binding);
    EXPECT_EQ(missing.plan.binding->service->config.host, "nokey.example.com");
}

TEST_F(RequestPlanTest, AnUnsupportedExpectIsRefusedWithoutNamingTheBinding) {
    auto d = bound("GET /api HTTP/1.1\r\nHost: api.example.com\r\nExpect: magic\r\n\r\n");
    EXPECT_EQ(d.refusal.status, 417);
    EXPECT_EQ(d.refusal.code, "expectation_failed");
    EXPECT_FALSE(d.plan.binding);
}

TEST_F(RequestPlanTest, PlainRequestsFollowThePlainHttpPolicy) {
    const Session& session = *state_->find_session("default");
    auto allowed = decide_plain_request(*state_, session, Authority{"plain.example.com", 80, HostKind::name}, "/p?q",
                                        head("GET http://plain.example.com/p?q HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_FALSE(allowed.refusal);
    EXPECT_FALSE(allowed.plan.binding);
    EXPECT_TRUE(allowed.plan.client_close);
    EXPECT_EQ(allowed.plan.summary.target, "/p?q");
    EXPECT_EQ(allowed.plan.outgoing.get("host"), "plain.example.com");

    auto denied = decide_plain_request(*state_, session, Authority{"other.example.com", 80, HostKind::name}, "/",
                                       head("GET http://other.example.com/ HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(denied.refusal.status, 403);
    EXPECT_EQ(denied.refusal.deny, DenyReason::domain_not_allowed);
    EXPECT_EQ(denied.refusal.reason, "domain_not_allowed");
}

TEST_F(RequestPlanTest, ACredentialThatWouldSplitTheHeadIsRefusedAndTheHeadKeptAsItWas) {
    RequestHead outgoing = head("GET / HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: mine\r\n\r\n");
    AuthSpec spec;
    spec.type = AuthType::bearer;
    auto refused = apply_credential(outgoing, spec, Secret("bad\r\nvalue"));
    EXPECT_EQ(refused.status, 502);
    EXPECT_EQ(refused.code, "credential_unusable");
    EXPECT_EQ(outgoing.get("authorization"), "mine");

    EXPECT_FALSE(apply_credential(outgoing, spec, Secret("sk-good")));
    EXPECT_EQ(outgoing.get("authorization"), "Bearer sk-good");
}

}  // namespace
}  // namespace vaultgate
