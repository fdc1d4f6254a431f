#include "vaultgate/state/gateway_state.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace vaultgate {
namespace {

using test::ScopedEnv;
using test::TempDir;

std::shared_ptr<const GatewayState> build(const std::string& yaml, std::vector<std::string>& warnings) {
    return build_state(parse_config(yaml, "s.yaml"), warnings);
}

std::shared_ptr<const GatewayState> build(const std::string& yaml) {
    std::vector<std::string> warnings;
    return build(yaml, warnings);
}

Authority name(const char* host, std::uint16_t port) { return Authority{host, port, HostKind::name}; }

TEST(GatewayStateTest, CredentialFromEnv) {
    ScopedEnv env("VG_TEST_ENV_KEY", "sk-from-env-0123456789");
    std::vector<std::string> warnings;
    const auto state = build(R"(
vaults:
  - name: v
    credentials:
      K: { env: VG_TEST_ENV_KEY }
)",
                             warnings);
    EXPECT_TRUE(warnings.empty());
    const Vault& v = state->vaults.at("v");
    EXPECT_EQ(v.id, "v");
    EXPECT_EQ(v.name, "v");
    EXPECT_TRUE(v.from_config);
    ASSERT_TRUE(v.credentials.count("K"));
    EXPECT_EQ(v.credentials.at("K").reveal(), "sk-from-env-0123456789");
}

TEST(GatewayStateTest, MissingOrEmptyEnvIsAWarningNotAnError) {
    ScopedEnv unset("VG_TEST_UNSET_KEY", nullptr);
    ScopedEnv empty("VG_TEST_EMPTY_KEY", "");
    std::vector<std::string> warnings;
    const auto state = build(R"(
vaults:
  - name: v
    credentials:
      A: { env: VG_TEST_UNSET_KEY }
      B: { env: VG_TEST_EMPTY_KEY }
)",
                             warnings);
    EXPECT_TRUE(state->vaults.at("v").credentials.empty());
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_EQ(warnings[0], "vault v: credential A is not set (env VG_TEST_UNSET_KEY)");
    EXPECT_EQ(warnings[1], "vault v: credential B is not set (env VG_TEST_EMPTY_KEY)");
}

// Redaction tables are built with the state, once per redacting service; each
// response then only gets the streaming state.
TEST(GatewayStateTest, RedactingServicesGetTheirTablesWhenTheStateIsBuilt) {
    ScopedEnv key("VG_TEST_REDACT_KEY", "sk-redact-0123456789");
    ScopedEnv pass("VG_TEST_BASIC_PASS", "hunter2-password");
    std::vector<std::string> warnings;
    const auto state = build(R"(
vaults:
  - name: v
    credentials:
      K: { env: VG_TEST_REDACT_KEY }
      P: { env: VG_TEST_BASIC_PASS }
    services:
      - host: plain.test
        auth: { type: api-key, key: K }
      - host: redacted.test
        auth: { type: api-key, key: K }
        redact_response: true
      - host: basic.test
        auth: { type: basic, user: alice, key: P }
        redact_response: true
)",
                             warnings);
    EXPECT_TRUE(warnings.empty());
    const auto& services = state->vaults.at("v").services;
    ASSERT_EQ(services.size(), 3u);
    EXPECT_EQ(services[0].redaction, nullptr);
    ASSERT_NE(services[1].redaction, nullptr);
    EXPECT_EQ(services[1].redaction->placeholder(), "vaultgate-placeholder-K");
    EXPECT_EQ(services[1].redaction->redact_all("x sk-redact-0123456789 y"), "x vaultgate-placeholder-K y");
    // Basic auth: the base64 of "alice:password" is what an origin echoes.
    ASSERT_NE(services[2].redaction, nullptr);
    EXPECT_TRUE(services[2].redaction->contains_secret("YWxpY2U6aHVudGVyMi1wYXNzd29yZA=="));
    EXPECT_TRUE(services[2].redaction->contains_secret("hunter2-password"));

    // Two Redactors share the tables; their stream states are their own.
    Redactor a(services[1].redaction);
    Redactor b(services[1].redaction);
    std::string out_a;
    std::string out_b;
    a.feed("sk-redact-01", out_a);
    b.feed("nothing here", out_b);
    a.feed("23456789!", out_a);
    a.finish(out_a);
    b.finish(out_b);
    EXPECT_EQ(out_a, "vaultgate-placeholder-K!");
    EXPECT_EQ(out_b, "nothing here");
}

TEST(GatewayStateTest, ACredentialInsideItsOwnPlaceholderIsReportedWhenTheStateIsBuilt) {
    ScopedEnv key("VG_TEST_SHORT_KEY", "place");
    std::vector<std::string> warnings;
    const auto state = build(R"(
vaults:
  - name: v
    credentials:
      SHORT: { env: VG_TEST_SHORT_KEY }
    services:
      - host: redacted.test
        auth: { type: api-key, key: SHORT }
        redact_response: true
)",
                             warnings);
    EXPECT_EQ(state->vaults.at("v").services.at(0).redaction, nullptr);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0],
              "vault v: credential SHORT occurs in its redaction placeholder; requests to "
              "redacted.test are refused (502 redaction_unavailable)");
}

// A redacted credential found in another credential's placeholder, or inside
// another credential, is reported when the state is built (names only), and
// not again when a later publish keeps the vault as it was.
TEST(GatewayStateTest, PlaceholderCollisionsAreReportedWhenTheStateIsBuilt) {
    ScopedEnv in_placeholder("VG_TEST_IN_PLACEHOLDER", "placeholder-OTHER");
    ScopedEnv inner("VG_TEST_INNER_KEY", "sk-inner-0123456789");
    ScopedEnv outer("VG_TEST_OUTER_KEY", "prefix-sk-inner-0123456789-suffix");
    std::vector<std::string> warnings;
    const auto state = build(R"(
vaults:
  - name: v
    credentials:
      SHORT: { env: VG_TEST_IN_PLACEHOLDER }
      OTHER: { env: VG_TEST_OUTER_KEY }
      INNER: { env: VG_TEST_INNER_KEY }
    services:
      - host: short.test
        auth: { type: api-key, key: SHORT }
        redact_response: true
      - host: inner.test
        auth: { type: api-key, key: INNER }
        redact_response: true
      - host: outer.test
        auth: { type: api-key, key: OTHER }
)",
                             warnings);
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_EQ(warnings[0],
              "vault v: credential INNER occurs inside credential OTHER; redacting responses of "
              "inner.test would leave the rest of OTHER");
    EXPECT_EQ(warnings[1],
              "vault v: credential SHORT occurs in vaultgate-placeholder-OTHER, the placeholder of "
              "credential OTHER; redacted responses cannot tell the two apart");
    for (const auto& w : warnings) {
        EXPECT_EQ(w.find("sk-inner"), std::string::npos) << w;
        EXPECT_EQ(w.find("prefix-"), std::string::npos) << w;
    }
    // Redaction itself still works.
    ASSERT_NE(state->vaults.at("v").services.at(1).redaction, nullptr);

    Vault again = state->vaults.at("v");
    std::vector<std::string> later;
    prepare_services(again, &later, &state->vaults.at("v"));
    EXPECT_TRUE(later.empty());
}

struct FileCase {
    const char* name;
    std::string content;
    std::optional<std::string> want;  // nullopt: absent, with a warning
};

TEST(GatewayStateTest, CredentialFromFile) {
    const FileCase cases[] = {
        {"plain", "sk-file-value", "sk-file-value"},
        {"newline", "sk-file-value\n", "sk-file-value"},
        {"crlf", "sk-file-value\r\n", "sk-file-value"},
        {"only_one_newline_stripped", "sk-file-value\n\n", std::nullopt},  // inner LF: control byte
        {"short", "k\n", "k"},
        {"long", std::string(5000, 'x') + "\n", std::string(5000, 'x')},
        {"empty", "", std::nullopt},
        {"just_newline", "\n", std::nullopt},
        {"embedded_crlf", "a\r\nX-Evil: 1", std::nullopt},
        {"embedded_nul", std::string("ab\0cd", 5), std::nullopt},
        // The admin API's length limit holds for config credentials too.
        {"at_the_limit", std::string(16 * 1024, 'x'), std::string(16 * 1024, 'x')},
        {"over_the_limit", std::string(16 * 1024 + 1, 'x'), std::nullopt},
    };
    const TempDir dir;
    for (const auto& c : cases) {
        const auto path = dir.write(c.name, c.content);
        std::vector<std::string> warnings;
        const auto state =
            build("vaults:\n  - name: v\n    credentials:\n      K: { file: \"" + path + "\" }\n", warnings);
        const auto& creds = state->vaults.at("v").credentials;
        if (c.want) {
            ASSERT_TRUE(creds.count("K")) << c.name;
            EXPECT_EQ(creds.at("K").reveal(), *c.want) << c.name;
            EXPECT_TRUE(warnings.empty()) << c.name;
        } else {
            EXPECT_FALSE(creds.count("K")) << c.name;
            ASSERT_EQ(warnings.size(), 1u) << c.name;
            EXPECT_NE(warnings[0].find("vault v: credential K "), std::string::npos) << warnings[0];
            EXPECT_NE(warnings[0].find("(file " + path + ")"), std::string::npos) << warnings[0];
        }
    }
}

TEST(GatewayStateTest, UnreadableCredentialFileIsAnError) {
    const TempDir dir;
    const auto missing = dir.file("missing");
    const auto too_big = dir.write("big", std::string(64 * 1024 + 1, 'x'));
    struct Case {
        std::string path;
        std::string reason;
    };
    const Case cases[] = {
        {missing, "No such file or directory"},
        {dir.file(""), "not a regular file"},
        {too_big, "larger than 65536 bytes"},
    };
    for (const auto& c : cases) {
        const auto yaml =
            "vaults:\n  - name: a\n  - name: v\n    credentials:\n      OK: { env: HOME }\n      K: { file: \"" +
            c.path + "\" }\n";
        try {
            build(yaml);
            ADD_FAILURE() << "no error for " << c.path;
        } catch (const ConfigError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "s.yaml: vaults[1].credentials.K: cannot read " + c.path + ": " + c.reason);
        }
    }
}

const std::string routing_yaml = R"(
vaults:
  - name: one
    credentials:
      K: { env: VG_TEST_ROUTE_KEY }
      GONE: { env: VG_TEST_ROUTE_UNSET }
    services:
      - host: api.example.com
        path_prefix: /api
        auth: { type: bearer, key: K }
      - host: api.example.com
        auth: { type: api-key, key: K }
      - host: "*.wild.example.com"
        auth: { type: bearer, key: K }
      - host: nokey.example.com
        auth: { type: bearer, key: GONE }
  - name: two
    credentials:
      K2: { env: VG_TEST_ROUTE_KEY }
    services:
      - host: api.example.com
        path_prefix: /v2
        auth: { type: bearer, key: K2 }
      - host: other.example.com
        auth: { type: bearer, key: K2 }
egress_policies:
  default:
    allowed_domains: [allowed.example.com, api.example.com]
  web:
    allow_http: true
    allowed_domains: [api.example.com, plain.example.com]
sessions:
  default: { vaults: [one, two] }
  only-two: { vaults: [two], egress_policy: default }
  web: { vaults: [one], egress_policy: web }
)";

class RoutingTest : public ::testing::Test {
protected:
    void SetUp() override {
        env_ = std::make_unique<ScopedEnv>("VG_TEST_ROUTE_KEY", "sk-route-secret");
        unset_ = std::make_unique<ScopedEnv>("VG_TEST_ROUTE_UNSET", nullptr);
        state_ = build(routing_yaml);
    }
    const Session& session(const char* id) {
        const Session* s = state_->find_session(id);
        if (!s) throw std::runtime_error("no session");
        return *s;
    }
    std::unique_ptr<ScopedEnv> env_;
    std::unique_ptr<ScopedEnv> unset_;
    std::shared_ptr<const GatewayState> state_;
};

TEST_F(RoutingTest, SnapshotShape) {
    EXPECT_EQ(state_->default_session, std::optional<std::string>("default"));
    ASSERT_NE(state_->default_session_ptr(), nullptr);
    EXPECT_EQ(state_->default_session_ptr()->id, "default");
    EXPECT_EQ(state_->default_session_ptr()->policy.name, "default");
    EXPECT_EQ(state_->find_session("web")->policy.name, "web");
    EXPECT_EQ(state_->find_session("nope"), nullptr);
    const Vault& one = state_->vaults.at("one");
    ASSERT_EQ(one.services.size(), 4u);
    EXPECT_EQ(one.services[0].id, "one/0");
    EXPECT_EQ(one.services[3].id, "one/3");
    EXPECT_EQ(state_->vaults.at("two").services[1].id, "two/1");
}

TEST_F(RoutingTest, BindingsInVaultOrder) {
    const auto b = state_->bindings_for(session("default"), "api.example.com", 443);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].service->id, "one/0");
    EXPECT_EQ(b[1].service->id, "one/1");
    EXPECT_EQ(b[2].service->id, "two/0");
    EXPECT_EQ(b[2].vault->name, "two");
    ASSERT_NE(b[0].secret, nullptr);
    EXPECT_EQ(b[0].secret->reveal(), "sk-route-secret");

    // Another session sees only its own vaults.
    const auto only = state_->bindings_for(session("only-two"), "api.example.com", 443);
    ASSERT_EQ(only.size(), 1u);
    EXPECT_EQ(only[0].service->id, "two/0");
    EXPECT_TRUE(state_->bindings_for(session("only-two"), "nokey.example.com", 443).empty());

    EXPECT_TRUE(state_->bindings_for(session("default"), "api.example.com", 8443).empty());
}

TEST_F(RoutingTest, MissingCredentialGivesNullSecret) {
    const auto b = state_->bindings_for(session("default"), "nokey.example.com", 443);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].secret, nullptr);
}

struct RequestCase {
    const char* path;
    const char* want_service;  // nullptr: no binding
};

TEST_F(RoutingTest, BindingForRequestByPathPrefix) {
    const RequestCase cases[] =
        {
            {"/api", "one/0"},          {"/api/", "one/0"}, {"/api/v1/x", "one/0"}, {"/api?x=1", "one/0"},
            {"/apix", "one/1"},         {"/", "one/1"},     {"/other", "one/1"},    {"/API", "one/1"},
            {"/api/../admin", "one/1"},  // not under /api once the origin resolves it
            {"/v2/x", "two/0"},          // the longer prefix, though its vault comes later
        };
    for (const auto& c : cases) {
        const auto b = state_->binding_for_request(session("default"), "api.example.com", 443, c.path);
        EXPECT_EQ(b.coverage, Coverage::covered) << c.path;
        ASSERT_TRUE(b.binding.has_value()) << c.path;
        EXPECT_EQ(b.binding->service->id, c.want_service) << c.path;
    }
    const auto none = state_->binding_for_request(session("only-two"), "x.example.com", 443, "/");
    EXPECT_EQ(none.coverage, Coverage::outside);
    EXPECT_FALSE(none.binding.has_value());
}

struct RouteCase {
    const char* session;
    const char* host;
    std::uint16_t port;
    EgressKind kind;
    RouteKind want;
    DenyReason reason;
};

TEST_F(RoutingTest, Route) {
    const RouteCase cases[] = {
        {"default", "api.example.com", 443, EgressKind::connect, RouteKind::mitm, DenyReason::none},
        {"default", "a.wild.example.com", 443, EgressKind::connect, RouteKind::mitm, DenyReason::none},
        {"default", "other.example.com", 443, EgressKind::connect, RouteKind::mitm, DenyReason::none},
        // Bound even though no policy allows it: the binding is the permission.
        {"only-two", "other.example.com", 443, EgressKind::connect, RouteKind::mitm, DenyReason::none},
        {"default", "allowed.example.com", 443, EgressKind::connect, RouteKind::tunnel, DenyReason::none},
        {"default", "wild.example.com", 443, EgressKind::connect, RouteKind::denied, DenyReason::domain_not_allowed},
        {"default", "evil.example.net", 443, EgressKind::connect, RouteKind::denied, DenyReason::domain_not_allowed},
        {"only-two", "nokey.example.com", 443, EgressKind::connect, RouteKind::denied, DenyReason::domain_not_allowed},
        // Plain http never reaches injection; the policy alone decides.
        {"default", "api.example.com", 80, EgressKind::plain_http, RouteKind::denied, DenyReason::http_not_allowed},
        {"web", "api.example.com", 80, EgressKind::plain_http, RouteKind::tunnel, DenyReason::none},
        {"web", "plain.example.com", 80, EgressKind::plain_http, RouteKind::tunnel, DenyReason::none},
        {"web", "elsewhere.example.com", 80, EgressKind::plain_http, RouteKind::denied, DenyReason::domain_not_allowed},
    };
    for (const auto& c : cases) {
        const Route r = state_->route(session(c.session), name(c.host, c.port), c.kind);
        EXPECT_EQ(r.kind, c.want) << c.session << " " << c.host << ":" << c.port;
        EXPECT_EQ(r.reason, c.reason) << c.session << " " << c.host << ":" << c.port;
    }
}

TEST(GatewayStateTest, NoSessionsMeansNoDefault) {
    const auto state = build("vaults:\n  - name: v\n");
    EXPECT_FALSE(state->default_session.has_value());
    EXPECT_EQ(state->default_session_ptr(), nullptr);
    EXPECT_TRUE(state->sessions.empty());
}

TEST(GatewayStateTest, NonDefaultSessionsOnlyGiveNoDefault) {
    const auto state = build("egress_policies:\n  p: {}\nsessions:\n  worker: { egress_policy: p }\n");
    EXPECT_FALSE(state->default_session.has_value());
    ASSERT_NE(state->find_session("worker"), nullptr);
    EXPECT_EQ(state->find_session("worker")->id, "worker");
}

TEST(GatewayStateTest, HandBuiltConfigWithUnknownPolicyIsAnError) {
    Config c;
    c.sessions["s"] = SessionConfig{{}, "missing"};
    std::vector<std::string> warnings;
    EXPECT_THROW(build_state(c, warnings), ConfigError);
}

// Overlapping bindings of one session: the most specific wins, whatever the
// order of the vaults (both sessions list them the other way round).
const std::string overlap_yaml = R"(
vaults:
  - name: broad
    credentials:
      K: { env: VG_TEST_ROUTE_KEY }
    services:
      - host: api.example.com
        auth: { type: bearer, key: K }
      - host: "*.example.com"
        path_prefix: /v1/
        auth: { type: bearer, key: K }
  - name: narrow
    credentials:
      K: { env: VG_TEST_ROUTE_KEY }
    services:
      - host: api.example.com
        path_prefix: /v1/
        auth: { type: bearer, key: K }
      - host: api.example.com
        path_prefix: /v1/deep/
        auth: { type: bearer, key: K }
      - host: "*.eu.example.com"
        auth: { type: bearer, key: K }
      - host: api.example.com
        port: 8443
        path_prefix: /v1/
        auth: { type: bearer, key: K }
egress_policies:
  default: {}
sessions:
  default: { vaults: [broad, narrow] }
  reversed: { vaults: [narrow, broad] }
)";

struct SpecificityCase {
    const char* host;
    std::uint16_t port;
    const char* path;
    Coverage coverage;
    const char* want_service;  // when covered
};

TEST(BindingSpecificityTest, TheMostSpecificBindingWinsWhateverTheVaultOrder) {
    ScopedEnv env("VG_TEST_ROUTE_KEY", "sk-route-secret");
    const auto state = build(overlap_yaml);
    const SpecificityCase cases[] = {
        {"api.example.com", 443, "/v1/x", Coverage::covered, "narrow/0"},       // longer prefix
        {"api.example.com", 443, "/v1/deep/x", Coverage::covered, "narrow/1"},  // longest prefix
        {"api.example.com", 443, "/v1", Coverage::covered, "broad/0"},          // "/v1/" does not cover it
        {"api.example.com", 443, "/other", Coverage::covered, "broad/0"},
        {"api.example.com", 443, "/v1/..;/admin", Coverage::covered, "broad/0"},  // only "/" covers it
        {"x.example.com", 443, "/v1/x", Coverage::covered, "broad/1"},            // the wildcard alone
        {"x.example.com", 443, "/other", Coverage::outside, nullptr},
        {"x.example.com", 443, "/other;x", Coverage::unclear_path, nullptr},
        {"x.example.com", 443, "/v1/..;/admin", Coverage::unclear_path, nullptr},
        {"a.eu.example.com", 443, "/v1/x", Coverage::covered, "narrow/2"},  // the longer wildcard first
        {"api.example.com", 8443, "/v1/x", Coverage::covered, "narrow/3"},  // the port must match
        {"api.example.com", 8443, "/v2", Coverage::outside, nullptr},
    };
    for (const char* session : {"default", "reversed"}) {
        for (const auto& c : cases) {
            SCOPED_TRACE(std::string(session) + " " + c.host + ":" + std::to_string(c.port) + c.path);
            const auto b = state->binding_for_request(*state->find_session(session), c.host, c.port, c.path);
            EXPECT_EQ(b.coverage, c.coverage);
            ASSERT_EQ(b.binding.has_value(), c.want_service != nullptr);
            if (c.want_service) {
                EXPECT_EQ(b.binding->service->id, c.want_service);
            }
        }
    }
}

// A hand-built Config skips the loader's checks, as data stored before they
// existed would: a tie found at request time is refused, never picked by order.
Config tied_config() {
    Config c;
    for (const char* name : {"a", "b"}) {
        VaultConfig v;
        v.name = name;
        v.credentials["K"] = CredentialSource{CredentialSource::Kind::env, "VG_TEST_ROUTE_KEY"};
        ServiceConfig s;
        s.host = "api.example.com";
        s.path_prefix = "/v1/";
        s.auth.type = AuthType::bearer;
        s.auth.key = "K";
        v.services.push_back(s);
        c.vaults.push_back(v);
    }
    c.egress_policies["default"] = EgressPolicy{};
    c.sessions["both"] = SessionConfig{{"a", "b"}, "default"};
    c.sessions["one"] = SessionConfig{{"a"}, "default"};
    return c;
}

TEST(BindingSpecificityTest, ATieIsFoundAndRefusedAtRequestTime) {
    ScopedEnv env("VG_TEST_ROUTE_KEY", "sk-route-secret");
    std::vector<std::string> warnings;
    const auto state = build_state(tied_config(), warnings);
    const Session& both = *state->find_session("both");
    const auto tie = state->find_binding_tie(both);
    ASSERT_TRUE(tie.has_value());
    EXPECT_EQ(tie->first, "vault 'a' service a/0 (api.example.com:443 /v1/)");
    EXPECT_EQ(tie->second, "vault 'b' service b/0 (api.example.com:443 /v1/)");
    const auto b = state->binding_for_request(both, "api.example.com", 443, "/v1/x");
    EXPECT_EQ(b.coverage, Coverage::tied);
    EXPECT_FALSE(b.binding.has_value());

    const Session& one = *state->find_session("one");
    EXPECT_FALSE(state->find_binding_tie(one).has_value());
    EXPECT_EQ(state->binding_for_request(one, "api.example.com", 443, "/v1/x").coverage, Coverage::covered);
}

struct TieCase {
    const char* host;
    std::uint16_t port;
    const char* prefix;
    bool tie;  // with api.example.com:443 /v1/
};

TEST(BindingSpecificityTest, OnlyTheSameHostPatternPortAndPrefixTie) {
    ScopedEnv env("VG_TEST_ROUTE_KEY", "sk-route-secret");
    const TieCase cases[] = {
        {"api.example.com", 443, "/v1/", true}, {"api.example.com", 8443, "/v1/", false},
        {"api.example.com", 443, "/v1", false}, {"api.example.com", 443, "/", false},
        {"*.example.com", 443, "/v1/", false},  {"other.example.com", 443, "/v1/", false},
    };
    for (const auto& c : cases) {
        Config config = tied_config();
        config.vaults[1].services[0].host = c.host;
        config.vaults[1].services[0].port = c.port;
        config.vaults[1].services[0].path_prefix = c.prefix;
        std::vector<std::string> warnings;
        const auto state = build_state(config, warnings);
        EXPECT_EQ(state->find_binding_tie(*state->find_session("both")).has_value(), c.tie)
            << c.host << ":" << c.port << " " << c.prefix;
    }
}

// --- transparent clients: the session by source address ---------------------------

Session pinned(const std::string& id, const std::string& source, std::chrono::seconds expires_in) {
    Session s;
    s.id = id;
    s.source = parse_cidr(source);
    s.expires_at = std::chrono::system_clock::now() + expires_in;
    return s;
}

struct SourceCase {
    const char* client;
    const char* want;  // nullptr: no session
};

TEST(SessionForSourceTest, TheNarrowestRangeWinsAndEqualRangesGiveNone) {
    GatewayState st;
    const auto hour = std::chrono::hours(1);
    // Ids in the opposite order of the ranges, so that the first id is never the answer by luck.
    for (auto s : {pinned("ses_a_wide", "10.0.0.0/8", hour), pinned("ses_b_mid", "10.1.0.0/16", hour),
                   pinned("ses_c_narrow", "10.1.2.0/24", hour), pinned("ses_0_expired", "10.1.2.0/25", -hour),
                   pinned("ses_d_twin", "192.168.5.0/24", hour), pinned("ses_e_twin", "192.168.5.0/24", hour),
                   pinned("ses_f_v6", "fd00::/8", hour), pinned("ses_g_v6", "fd00:1::/32", hour),
                   pinned("ses_h_host", "10.9.9.9", hour)})
        st.sessions.emplace(s.id, s);
    Session fallback;
    fallback.id = "default";
    st.sessions.emplace("default", fallback);
    st.default_session = "default";

    const SourceCase cases[] = {
        {"10.1.2.3", "ses_c_narrow"}, {"::ffff:10.1.2.3", "ses_c_narrow"},  // the IPv4-mapped spelling is the same client
        {"10.1.3.1", "ses_b_mid"},    {"10.2.0.1", "ses_a_wide"},          {"10.9.9.9", "ses_h_host"},
        {"192.168.5.7", nullptr},  // two sessions with one range: neither
        {"fd00:1::5", "ses_g_v6"},    {"fd00:2::5", "ses_f_v6"},           {"172.16.0.1", "default"},
    };
    const auto now = std::chrono::system_clock::now();
    for (const auto& c : cases) {
        const Session* s = st.session_for_source(parse_ip_strict(c.client), now);
        if (!c.want) {
            EXPECT_EQ(s, nullptr) << c.client;
            continue;
        }
        ASSERT_NE(s, nullptr) << c.client;
        EXPECT_EQ(s->id, c.want) << c.client;
    }
    EXPECT_EQ(st.session_for_source(std::nullopt, now)->id, "default");
}

TEST(SessionForSourceTest, SameSourceRange) {
    const auto cidr = [](const char* text) { return *parse_cidr(text); };
    EXPECT_TRUE(same_source_range(cidr("10.0.0.0/8"), cidr("10.1.2.3/8")));
    EXPECT_TRUE(same_source_range(cidr("10.1.2.0/24"), cidr("::ffff:10.1.2.0/120")));
    EXPECT_FALSE(same_source_range(cidr("10.0.0.0/8"), cidr("10.0.0.0/16")));
    EXPECT_FALSE(same_source_range(cidr("10.0.0.0/8"), cidr("11.0.0.0/8")));
    EXPECT_FALSE(same_source_range(cidr("fd00::/8"), cidr("fd00::/16")));
}

}  // namespace
}  // namespace vaultgate
