// POST /v1/explain's decision: the proxy's own rules asked through the admin
// core, with the setting that decided, and the addresses folded in as the
// dialer would judge them.
#include "vaultgate/admin/explain.hpp"
#include "temp_dir.hpp"
#include "vaultgate/admin/api_error.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vaultgate::admin {
namespace {

using nlohmann::json;
using sys_clock = std::chrono::system_clock;
using test::ScopedEnv;

constexpr const char* secret = "sk-explain-SECRET-value-0123";

constexpr const char* config_yaml = R"(
vaults:
  - name: composio
    credentials:
      KEY: { env: VG_EXPLAIN_KEY }
      MISSING: { env: VG_EXPLAIN_UNSET }
    services:
      - host: backend.composio.dev
        path_prefix: /api/
        auth: { type: api-key, header: x-api-key, key: KEY }
      - host: nokey.example.com
        auth: { type: bearer, key: MISSING }
sessions:
  default: { vaults: [composio], egress_policy: default }
  locked: { vaults: [], egress_policy: closed }
egress_policies:
  default:
    allow_http: true
    allow_package_managers: true
    allowed_domains: [api.x.com, "*.internal.test", "other.example.com:8443"]
    allowed_cidrs: [10.1.0.0/16]
  closed:
    allow_https: false
    allow_http: false
)";

class ExplainTest : public ::testing::Test {
protected:
    ExplainTest() : key_("VG_EXPLAIN_KEY", secret), unset_("VG_EXPLAIN_UNSET", nullptr) {
        std::vector<std::string> warnings;
        state_ = build_state(parse_config(config_yaml, "explain.yaml"), warnings);
    }

    Explanation explain(const std::string& url, std::optional<std::string> session = std::nullopt,
                        const std::string& method = "GET") {
        ExplainQuery query;
        query.url = url;
        query.session = std::move(session);
        query.method = method;
        return explain_request(*state_, query, sys_clock::now());
    }

    // The ApiError status explain() refuses with, 0 when it does not.
    int refusal_status(const std::string& url, std::optional<std::string> session = std::nullopt) {
        try {
            explain(url, std::move(session));
        } catch (const ApiError& e) {
            return e.status;
        }
        return 0;
    }

    static int body_refusal(const std::string& body) {
        try {
            parse_explain_query(body);
        } catch (const ApiError& e) {
            return e.status;
        }
        return 0;
    }

    ScopedEnv key_;
    ScopedEnv unset_;
    std::shared_ptr<const GatewayState> state_;
};

void expect_key(const DecidingKey& key, const std::string& name, const std::string& value) {
    EXPECT_EQ(key.key, name);
    EXPECT_EQ(key.value, value);
}

TEST_F(ExplainTest, QueryBody) {
    const auto q = parse_explain_query(R"({"url":"https://api.x.com/","session":"ses_1","method":"POST"})");
    EXPECT_EQ(q.url, "https://api.x.com/");
    EXPECT_EQ(q.session, "ses_1");
    EXPECT_EQ(q.method, "POST");
    const auto defaults = parse_explain_query(R"({"url":"https://api.x.com/","session":null})");
    EXPECT_FALSE(defaults.session);
    EXPECT_EQ(defaults.method, "GET");

    EXPECT_EQ(body_refusal("{}"), 400);
    EXPECT_EQ(body_refusal("not json"), 400);
    EXPECT_EQ(body_refusal(R"({"url":"https://a/","extra":1})"), 400);
    EXPECT_EQ(body_refusal(R"({"url":"https://a/","method":"GE T"})"), 400);
    EXPECT_EQ(body_refusal(R"({"url":"https://a/","session":7})"), 400);
    EXPECT_EQ(body_refusal(R"({"url":"https://a/","session":""})"), 400);
    EXPECT_EQ(body_refusal(R"({"url":")" + std::string(9000, 'a') + R"("})"), 400);
}

TEST_F(ExplainTest, UrlsTheProxyWouldNotParseAreRefused) {
    EXPECT_EQ(refusal_status("ftp://api.x.com/"), 400);
    EXPECT_EQ(refusal_status("api.x.com:443"), 400);
    EXPECT_EQ(refusal_status("https://user@api.x.com/"), 400);
    EXPECT_EQ(refusal_status("https://api.x.com:0/"), 400);
    EXPECT_EQ(refusal_status("https://0x7f.1/"), 400);
    EXPECT_EQ(refusal_status("https:///path"), 400);
}

TEST_F(ExplainTest, UnknownSessionIs404) {
    EXPECT_EQ(refusal_status("https://api.x.com/", "ses_nope"), 404);
    EXPECT_EQ(refusal_status("https://api.x.com/", "default"), 0);
}

TEST_F(ExplainTest, TunnelNamesTheDomainRule) {
    const auto e = explain("HTTPS://API.X.com./v1/things?api_key=abc#frag");
    EXPECT_EQ(e.action, "tunnel");
    EXPECT_EQ(e.status, 0);
    EXPECT_EQ(e.scheme, "https");
    EXPECT_EQ(e.destination.host, "api.x.com");
    EXPECT_EQ(e.destination.port, 443);
    EXPECT_EQ(e.path, "/v1/things");  // never the query
    EXPECT_EQ(e.session, "default");
    EXPECT_EQ(e.policy, "default");
    expect_key(e.decided_by, "allowed_domains", "api.x.com");
    EXPECT_TRUE(e.would_dial());

    expect_key(explain("https://a.b.internal.test/").decided_by, "allowed_domains", "*.internal.test");
    expect_key(explain("https://other.example.com:8443/").decided_by, "allowed_domains", "other.example.com:8443");
    const auto bundle = explain("https://pypi.org/simple/");
    EXPECT_EQ(bundle.action, "tunnel");
    expect_key(bundle.decided_by, "allow_package_managers", "pypi.org");
}

TEST_F(ExplainTest, DenialsNameTheKeyAndCarryTheAdvice) {
    const auto other = explain("https://evil.example/");
    EXPECT_EQ(other.action, "denied");
    EXPECT_EQ(other.status, 403);
    EXPECT_EQ(other.reason, "domain_not_allowed");
    expect_key(other.decided_by, "allowed_domains", "");
    EXPECT_FALSE(other.would_dial());
    const json j = explanation_json(other);
    EXPECT_NE(j["advice"].get<std::string>().find("egress_policies.default.allowed_domains"), std::string::npos)
        << "the advice names the session's policy: " << j.dump();
    EXPECT_EQ(j["advice"].get<std::string>().find("<policy>"), std::string::npos) << j.dump();

    const auto port = explain("https://api.x.com:8443/");
    EXPECT_EQ(port.reason, "port_not_allowed");
    expect_key(port.decided_by, "allowed_domains", "api.x.com");

    const auto https = explain("https://api.x.com/", "locked");
    EXPECT_EQ(https.reason, "https_not_allowed");
    EXPECT_EQ(https.policy, "closed");
    expect_key(https.decided_by, "allow_https", "false");
    const auto http = explain("http://api.x.com/", "locked");
    EXPECT_EQ(http.reason, "http_not_allowed");
    expect_key(http.decided_by, "allow_http", "false");
}

TEST_F(ExplainTest, IpLiteralsAreJudgedByAllowedCidrs) {
    const auto inside = explain("https://10.1.2.3/");
    EXPECT_EQ(inside.action, "tunnel");
    expect_key(inside.decided_by, "allowed_cidrs", "10.1.0.0/16");
    const auto outside = explain("https://[2001:db8::1]:8443/");
    EXPECT_EQ(outside.destination.host, "2001:db8::1");
    EXPECT_EQ(outside.reason, "ip_literal_not_allowed");
    expect_key(outside.decided_by, "allowed_cidrs", "");
}

TEST_F(ExplainTest, BoundHostIsInterceptedWithItsBindingButNoSecret) {
    const auto e = explain("https://backend.composio.dev/api/v3/run", std::nullopt, "POST");
    EXPECT_EQ(e.action, "mitm");
    EXPECT_EQ(e.status, 0);
    ASSERT_TRUE(e.binding);
    EXPECT_EQ(e.binding->vault, "composio");
    EXPECT_EQ(e.binding->service, "composio/0");
    EXPECT_EQ(e.binding->auth_type, "api-key");
    EXPECT_EQ(e.binding->credential, "KEY");
    EXPECT_TRUE(e.binding->credential_set);
    EXPECT_EQ(e.binding->path_prefix, "/api/");
    expect_key(e.decided_by, "bound_service", "composio/0");
    const std::string text = explanation_json(e).dump();
    EXPECT_EQ(text.find(secret), std::string::npos) << text;
    EXPECT_EQ(text.find("fingerprint"), std::string::npos) << text;
}

TEST_F(ExplainTest, BoundHostOutsideEveryPrefixGoesWithoutACredential) {
    const auto e = explain("https://backend.composio.dev/health");
    EXPECT_EQ(e.action, "mitm");
    EXPECT_EQ(e.status, 0);
    EXPECT_FALSE(e.binding);
    expect_key(e.decided_by, "bound_service", "composio/0");

    // A path an origin may read as another one is refused on a bound host.
    const auto unclear = explain("https://backend.composio.dev/%2e%2e/api/x");
    EXPECT_EQ(unclear.action, "denied");
    EXPECT_EQ(unclear.reason, "path_not_covered");
}

TEST_F(ExplainTest, RequestLevelRefusalsOfTheBoundPath) {
    const auto missing = explain("https://nokey.example.com/");
    EXPECT_EQ(missing.action, "mitm");
    EXPECT_EQ(missing.status, 503);
    EXPECT_EQ(missing.reason, "credential_missing");
    ASSERT_TRUE(missing.binding);
    EXPECT_FALSE(missing.binding->credential_set);
    EXPECT_EQ(missing.binding->auth_type, "bearer");
    EXPECT_FALSE(missing.would_dial());

    const auto trace = explain("https://backend.composio.dev/api/x", std::nullopt, "TRACE");
    EXPECT_EQ(trace.status, 405);
    EXPECT_EQ(trace.reason, "method_not_allowed");
}

TEST_F(ExplainTest, PlainHttpIsNeverBound) {
    const auto allowed = explain("http://api.x.com/x?q=1");
    EXPECT_EQ(allowed.action, "http");
    EXPECT_EQ(allowed.scheme, "http");
    EXPECT_EQ(allowed.destination.port, 80);
    EXPECT_EQ(allowed.path, "/x");
    expect_key(allowed.decided_by, "allowed_domains", "api.x.com");

    const auto bound = explain("http://backend.composio.dev/api/x");
    EXPECT_EQ(bound.action, "denied");
    EXPECT_EQ(bound.reason, "domain_not_allowed");
    EXPECT_FALSE(bound.binding);

    const auto trace = explain("http://api.x.com/", std::nullopt, "TRACE");
    EXPECT_EQ(trace.action, "http");
    EXPECT_EQ(trace.status, 405);
}

TEST_F(ExplainTest, NoDefaultSessionMeans407) {
    std::vector<std::string> warnings;
    const auto state = build_state(parse_config("egress_policies:\n  default: {}\n", "x.yaml"), warnings);
    ExplainQuery query;
    query.url = "https://api.x.com/";
    const auto e = explain_request(*state, query, sys_clock::now());
    EXPECT_EQ(e.action, "denied");
    EXPECT_EQ(e.status, 407);
    EXPECT_EQ(e.reason, "session_required");
    EXPECT_FALSE(e.session);
    expect_key(e.decided_by, "sessions.default", "");
    EXPECT_FALSE(e.would_dial());
    const json j = explanation_json(e);
    EXPECT_TRUE(j["session"].is_null());
    EXPECT_TRUE(j["resolution"].is_null());
    EXPECT_NE(j["advice"].get<std::string>().find("sessions.default"), std::string::npos);
}

ExplainResolution resolution_of(const EgressPolicy& policy, const std::string& source,
                                const std::vector<std::string>& addresses) {
    ExplainResolution r;
    r.source = source;
    for (const auto& text : addresses) {
        const auto ip = *parse_ip_strict(text);
        r.addresses.emplace_back(ip, judge_address(policy, ip, source == "upstream.resolve"));
    }
    return r;
}

TEST_F(ExplainTest, OneDeniedAddressDeniesTheName) {
    auto e = explain("https://api.x.com/");
    settle_addresses(e, resolution_of(e.policy_rules, "dns", {"93.184.216.34", "10.0.0.5", "127.0.0.1"}));
    EXPECT_EQ(e.action, "denied");
    EXPECT_EQ(e.status, 403);
    EXPECT_EQ(e.reason, "private_address");
    expect_key(e.decided_by, "address_class", "private_network");
    ASSERT_EQ(e.addresses.size(), 3u);
    EXPECT_EQ(e.addresses[0].address_class, "global");
    EXPECT_EQ(e.addresses[0].reason, DenyReason::none);
    EXPECT_EQ(e.addresses[1].reason, DenyReason::private_address);
    EXPECT_EQ(e.addresses[2].address_class, "loopback");
    EXPECT_EQ(e.addresses[2].reason, DenyReason::loopback_address);

    const json j = explanation_json(e);
    EXPECT_EQ(j["resolution"]["source"], "dns");
    EXPECT_TRUE(j["resolution"]["error"].is_null());
    EXPECT_EQ(j["addresses"][1]["address"], "10.0.0.5");
    EXPECT_EQ(j["addresses"][1]["class"], "private_network");
    EXPECT_EQ(j["addresses"][1]["allowed"], false);
    EXPECT_EQ(j["addresses"][1]["reason"], "private_address");
    EXPECT_EQ(j["addresses"][0]["allowed"], true);
    EXPECT_TRUE(j["addresses"][0]["reason"].is_null());
}

TEST_F(ExplainTest, PinnedAndListedAddressesAreAllowed) {
    auto pinned = explain("https://api.x.com/");
    settle_addresses(pinned, resolution_of(pinned.policy_rules, "upstream.resolve", {"192.168.1.9"}));
    EXPECT_EQ(pinned.action, "tunnel");
    expect_key(pinned.decided_by, "allowed_domains", "api.x.com");
    expect_key(pinned.addresses[0].decided_by, "upstream.resolve", "api.x.com");
    EXPECT_EQ(pinned.addresses[0].address_class, "private_network");

    auto listed = explain("https://10.1.2.3/");
    settle_addresses(listed, resolution_of(listed.policy_rules, "literal", {"10.1.2.3"}));
    EXPECT_EQ(listed.action, "tunnel");
    expect_key(listed.addresses[0].decided_by, "allowed_cidrs", "10.1.0.0/16");
}

TEST_F(ExplainTest, SelfConnectionAndLookupFailures) {
    auto self = explain("https://api.x.com/");
    ExplainResolution r = resolution_of(self.policy_rules, "dns", {"127.0.0.1"});
    r.addresses[0].second.reason = DenyReason::self_connection;
    settle_addresses(self, r);
    EXPECT_EQ(self.reason, "self_connection");
    expect_key(self.decided_by, "listen", "127.0.0.1");

    auto failed = explain("https://api.x.com/");
    settle_addresses(failed, ExplainResolution{"dns", "resolve_failed", {}});
    EXPECT_EQ(failed.action, "tunnel");
    EXPECT_EQ(failed.status, 502);
    EXPECT_EQ(failed.reason, "resolve_failed");
    EXPECT_EQ(explanation_json(failed)["resolution"]["error"], "resolve_failed");

    auto slow = explain("https://api.x.com/");
    settle_addresses(slow, ExplainResolution{"dns", "resolve_timeout", {}});
    EXPECT_EQ(slow.status, 504);
}

TEST_F(ExplainTest, AddressesOfARefusedRequestDecideNothing) {
    auto e = explain("https://evil.example/");
    settle_addresses(e, resolution_of(e.policy_rules, "dns", {"10.0.0.5"}));
    EXPECT_EQ(e.reason, "domain_not_allowed");
    expect_key(e.decided_by, "allowed_domains", "");
    ASSERT_EQ(e.addresses.size(), 1u);
    EXPECT_EQ(e.addresses[0].reason, DenyReason::private_address);
}

TEST_F(ExplainTest, JsonShape) {
    const nlohmann::ordered_json j = explanation_json(explain("https://backend.composio.dev/api/x?token=zzz"));
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"action", "status", "reason", "decided_by", "advice", "request",
                                              "session", "policy", "binding", "resolution", "addresses"}));
    EXPECT_EQ(j["action"], "mitm");
    EXPECT_TRUE(j["status"].is_null());
    EXPECT_TRUE(j["reason"].is_null());
    EXPECT_TRUE(j["advice"].is_null());
    EXPECT_EQ(j["decided_by"], (nlohmann::ordered_json{{"key", "bound_service"}, {"value", "composio/0"}}));
    EXPECT_EQ(j["request"], (nlohmann::ordered_json{{"method", "GET"},
                                                    {"scheme", "https"},
                                                    {"host", "backend.composio.dev"},
                                                    {"port", 443},
                                                    {"path", "/api/x"}}));
    EXPECT_EQ(j["session"], "default");
    EXPECT_EQ(j["policy"], "default");
    EXPECT_EQ(j["binding"]["vault"], "composio");
    EXPECT_EQ(j["binding"]["vault_id"], "composio");
    EXPECT_EQ(j["binding"]["host"], "backend.composio.dev");
    EXPECT_EQ(j["binding"]["port"], 443);
    EXPECT_EQ(j["binding"]["redact_response"], false);
    EXPECT_TRUE(j["resolution"].is_null());
    EXPECT_TRUE(j["addresses"].empty());
    EXPECT_EQ(j.dump().find("zzz"), std::string::npos);
}

}  // namespace
}  // namespace vaultgate::admin
