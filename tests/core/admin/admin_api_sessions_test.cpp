// The admin API: sessions, and the bindings and sources no rule could choose between.
#include "admin_api_fixture.hpp"

namespace vaultgate::admin_test {
namespace {

// --- sessions ---

TEST_F(AdminApiTest, SessionCreate) {
    const std::string id = create_vault("apivault");
    const auto before = sys_clock::now();
    const json s = create_session({{"vault_ids", {id, "cfgvault", id}}, {"ttl_seconds", 600}});

    const std::string sid = s["id"];
    const std::string token = s["token"];
    EXPECT_TRUE(sid.starts_with("ses_")) << sid;
    EXPECT_GE(token.size(), 43u);
    EXPECT_EQ(s["proxy_url"], "http://" + sid + ":" + token + "@127.0.0.1:3128");
    for (const char* name : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"})
        EXPECT_EQ(s["env"][name], s["proxy_url"]) << name;
    EXPECT_EQ(s["env"]["NO_PROXY"], "localhost,127.0.0.1,::1");
    EXPECT_EQ(s["ca_cert_pem"], "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n");
    const std::string expires = s["expires_at"];
    EXPECT_EQ(expires.size(), 20u) << expires;  // 2026-01-01T00:00:00Z
    EXPECT_EQ(expires.back(), 'Z');

    const Session* session = snapshot()->find_session(sid);
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->token_digest, token_digest(token));
    EXPECT_EQ(session->vault_names, (std::vector<std::string>{"apivault", "cfgvault"}));
    ASSERT_TRUE(session->expires_at.has_value());
    // Never less than the ttl asked for; at most a second more (whole seconds).
    EXPECT_GE(*session->expires_at, before + std::chrono::seconds(600));
    EXPECT_LE(*session->expires_at, sys_clock::now() + std::chrono::seconds(601));
    EXPECT_EQ(session->policy.name, "default");  // absent -> the config's "default"
    ASSERT_EQ(session->policy.allowed_domains.size(), 1u);
    EXPECT_EQ(session->policy.allowed_domains[0].host, "pypi.org");
    EXPECT_FALSE(session->source.has_value());
    // The config's own sessions stay.
    EXPECT_NE(snapshot()->default_session_ptr(), nullptr);

    // Default TTL: one hour.
    const json d = create_session(json::object());
    const Session* ds = snapshot()->find_session(d["id"].get<std::string>());
    ASSERT_NE(ds, nullptr);
    EXPECT_TRUE(ds->vault_names.empty());
    EXPECT_GE(*ds->expires_at, before + std::chrono::seconds(3600));
    EXPECT_LE(*ds->expires_at, sys_clock::now() + std::chrono::seconds(3601));
}

TEST_F(AdminApiTest, SessionPolicies) {
    json s = create_session({{"egress_policy", "open"}});
    const Session* named = snapshot()->find_session(s["id"].get<std::string>());
    ASSERT_NE(named, nullptr);
    EXPECT_EQ(named->policy.name, "open");
    EXPECT_TRUE(named->policy.allow_http);
    ASSERT_EQ(named->policy.allowed_domains.size(), 1u);
    EXPECT_TRUE(named->policy.allowed_domains[0].wildcard);

    s = create_session({{"egress_policy", {{"allow_https", true}, {"allowed_domains", {"api.github.com"}}}},
                        {"source", "10.0.0.0/24"}});
    const Session* inline_policy = snapshot()->find_session(s["id"].get<std::string>());
    ASSERT_NE(inline_policy, nullptr);
    EXPECT_EQ(inline_policy->policy.name, "");
    ASSERT_EQ(inline_policy->policy.allowed_domains.size(), 1u);
    EXPECT_EQ(inline_policy->policy.allowed_domains[0].host, "api.github.com");
    ASSERT_TRUE(inline_policy->source.has_value());
    EXPECT_TRUE(inline_policy->source->contains(IpAddress::v4(10, 0, 0, 7)));
    EXPECT_FALSE(inline_policy->source->contains(IpAddress::v4(10, 0, 1, 7)));

    auto r = call("POST", "/v1/sessions", json{{"egress_policy", leak}}.dump());
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "unknown_policy");
    r = call("POST", "/v1/sessions", json{{"egress_policy", {{"allowed_domains", {leak + "/x"}}}}}.dump());
    EXPECT_EQ(error_code(r), "invalid_policy");
    r = call("POST", "/v1/sessions", json{{"egress_policy", {{"allowed_cidrs", {leak}}}}}.dump());
    EXPECT_EQ(error_code(r), "invalid_policy");
    r = call("POST", "/v1/sessions", json{{"egress_policy", {{leak, true}}}}.dump());
    EXPECT_EQ(error_code(r), "invalid_policy");
    r = call("POST", "/v1/sessions", json{{"egress_policy", 3}}.dump());
    EXPECT_EQ(error_code(r), "invalid_request");
}

TEST(AdminApiStandaloneTest, NoDefaultPolicyMeansDenyAll) {
    TempDir dir;
    std::shared_ptr<const GatewayState> published;
    AdminApi api(parse_config("egress_policies:\n  wide: { allowed_domains: [example.com] }\n", "t.yaml"),
                 open_file_store(dir.file("s.db"), master_key()), master_key(), AdminOptions{},
                 [&](std::shared_ptr<const GatewayState> s) { published = std::move(s); }, nullptr, nullptr, {});
    api.load();
    const auto r = api.handle(AdminRequest{"POST", "/v1/sessions", {}, "{}"});
    ASSERT_EQ(r.status, 201) << r.body;
    const json s = json::parse(r.body);
    const Session* session = published->find_session(s["id"].get<std::string>());
    ASSERT_NE(session, nullptr);
    EXPECT_FALSE(session->policy.allow_https);
    EXPECT_FALSE(session->policy.allow_http);
    EXPECT_FALSE(session->policy.allow_package_managers);
    EXPECT_TRUE(session->policy.allowed_domains.empty());
    EXPECT_TRUE(session->policy.allowed_cidrs.empty());
    // Without options.proxy_url, the URL comes from listen.proxy.
    EXPECT_TRUE(s["proxy_url"].get<std::string>().ends_with("@127.0.0.1:3128"));

    // Null log, metrics and counts are empty answers, not crashes.
    const auto logs = api.handle(AdminRequest{"GET", "/v1/logs", {}, ""});
    EXPECT_EQ(json::parse(logs.body), json({{"entries", json::array()}}));
    const auto metrics = api.handle(AdminRequest{"GET", "/metrics", {}, ""});
    EXPECT_EQ(metrics.status, 200);
    EXPECT_TRUE(metrics.body.empty());
}

TEST_F(AdminApiTest, SessionValidation) {
    struct Case {
        json body;
        const char* code;
    };
    // A vault that is not there is a 404, as on every path that names one.
    for (const auto& unknown : {leak, std::string("vlt_nosuch"), std::string("no-such-name")}) {
        const auto r = call("POST", "/v1/sessions", json{{"vault_ids", {unknown}}}.dump());
        EXPECT_EQ(r.status, 404) << unknown;
        EXPECT_EQ(error_code(r), "unknown_vault") << unknown;
    }
    const Case cases[] = {
        {{{"vault_ids", "cfgvault"}}, "invalid_request"},
        {{{"vault_ids", {1}}}, "invalid_request"},
        {{{"ttl_seconds", 0}}, "invalid_ttl"},
        {{{"ttl_seconds", -5}}, "invalid_ttl"},
        {{{"ttl_seconds", 86401}}, "invalid_ttl"},
        {{{"ttl_seconds", 1.5}}, "invalid_ttl"},
        {{{"ttl_seconds", "60"}}, "invalid_ttl"},
        {{{"ttl_seconds", 18446744073709551615ull}}, "invalid_ttl"},
        {{{"source", leak}}, "invalid_source"},
        {{{"source", 10}}, "invalid_source"},
        {{{"token", leak}}, "invalid_request"},
    };
    for (const auto& c : cases) {
        const auto r = call("POST", "/v1/sessions", c.body.dump());
        EXPECT_EQ(r.status, 400) << c.body.dump();
        EXPECT_EQ(error_code(r), c.code) << c.body.dump();
    }
    // Only the config's session made it into the snapshot.
    EXPECT_EQ(snapshot()->sessions.size(), 1u);
    EXPECT_EQ(call("POST", "/v1/sessions", json{{"ttl_seconds", 86400}}.dump()).status, 201);
    EXPECT_EQ(call("POST", "/v1/sessions", json{{"ttl_seconds", 1}}.dump()).status, 201);
}

TEST_F(AdminApiTest, SessionCannotUseAnotherSessionsVault) {
    const std::string a = create_vault("vault-a");
    const std::string b = create_vault("vault-b");
    add_credential(a, "KEY", api_secret);
    add_credential(b, "KEY", rotated_secret);
    add_service(a, "a.example.com", "KEY");
    add_service(b, "b.example.com", "KEY");

    const json sa = create_session({{"vault_ids", {a}}});
    const json sb = create_session({{"vault_ids", {b}}});
    const auto state = snapshot();
    const Session* session_a = state->find_session(sa["id"].get<std::string>());
    const Session* session_b = state->find_session(sb["id"].get<std::string>());
    ASSERT_NE(session_a, nullptr);
    ASSERT_NE(session_b, nullptr);
    EXPECT_EQ(session_a->vault_names, std::vector<std::string>{"vault-a"});
    EXPECT_EQ(session_b->vault_names, std::vector<std::string>{"vault-b"});

    EXPECT_TRUE(state->bindings_for(*session_a, "b.example.com", 443).empty());
    const auto own = state->bindings_for(*session_a, "a.example.com", 443);
    ASSERT_EQ(own.size(), 1u);
    ASSERT_NE(own[0].secret, nullptr);
    EXPECT_EQ(own[0].secret->reveal(), api_secret);
    EXPECT_EQ(state->route(*session_a, Authority{"b.example.com", 443, HostKind::name}, EgressKind::connect).kind,
              RouteKind::denied);
    EXPECT_EQ(state->route(*session_b, Authority{"b.example.com", 443, HostKind::name}, EgressKind::connect).kind,
              RouteKind::mitm);
}

TEST_F(AdminApiTest, DeleteSession) {
    const json s = create_session(json::object());
    const std::string sid = s["id"];
    ASSERT_NE(snapshot()->find_session(sid), nullptr);

    auto r = call("DELETE", "/v1/sessions/" + sid);
    EXPECT_EQ(r.status, 204);
    EXPECT_EQ(snapshot()->find_session(sid), nullptr);
    EXPECT_EQ(closed(), std::vector<std::string>{sid});
    EXPECT_TRUE(open_file_store(store_path(), master_key())->load().sessions.empty());

    r = call("DELETE", "/v1/sessions/" + sid);
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "session_not_found");
    r = call("DELETE", "/v1/sessions/default");
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "read_only");
    EXPECT_EQ(closed().size(), 1u);
}

TEST_F(AdminApiTest, ExpireSessions) {
    const json short_lived = create_session({{"ttl_seconds", 1}});
    const json long_lived = create_session({{"ttl_seconds", 3600}});
    const std::string gone = short_lived["id"], kept = long_lived["id"];

    EXPECT_TRUE(api_->expire_sessions(sys_clock::now() - std::chrono::seconds(5)).empty());
    EXPECT_TRUE(closed().empty());

    const auto expired = api_->expire_sessions(sys_clock::now() + std::chrono::seconds(10));
    EXPECT_EQ(expired, std::vector<std::string>{gone});
    EXPECT_EQ(closed(), std::vector<std::string>{gone});
    EXPECT_EQ(snapshot()->find_session(gone), nullptr);
    EXPECT_NE(snapshot()->find_session(kept), nullptr);
    const StoreData saved = open_file_store(store_path(), master_key())->load();
    ASSERT_EQ(saved.sessions.size(), 1u);
    EXPECT_EQ(saved.sessions[0].id, kept);

    EXPECT_TRUE(api_->expire_sessions(sys_clock::now() + std::chrono::seconds(10)).empty());
    EXPECT_EQ(closed().size(), 1u);
}

TEST_F(AdminApiTest, OnlyTheTokenDigestIsStored) {
    const std::string id = create_vault("v");
    const json s = create_session({{"vault_ids", {id}}});
    const std::string token = s["token"];

    const StoreData saved = open_file_store(store_path(), master_key())->load();
    ASSERT_EQ(saved.sessions.size(), 1u);
    const StoredSession& stored = saved.sessions[0];
    EXPECT_EQ(stored.id, s["id"]);
    EXPECT_EQ(stored.token_digest, token_digest(token));
    EXPECT_NE(stored.token_digest, token);
    EXPECT_EQ(stored.vault_ids, std::vector<std::string>{id});
    EXPECT_EQ(stored.policy.name, "default");

    std::ifstream in(store_path(), std::ios::binary);
    const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(raw.find(token), std::string::npos);
}

// --- bindings and sources that no rule could choose between ---

TEST_F(AdminApiTest, ASessionWhoseVaultsTieIsRefused) {
    const std::string a = create_vault("tie-a");
    const std::string b = create_vault("tie-b");
    add_credential(a, "KEY", api_secret);
    add_credential(b, "KEY", rotated_secret);
    add_service(a, "cfg.example.com", "KEY");  // the config vault's host, port and prefix
    add_service(b, "other.example.com", "KEY");
    const int before = publishes();

    auto r = call("POST", "/v1/sessions", json{{"vault_ids", {a, "cfgvault"}}}.dump());
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(error_code(r), "binding_conflict");
    const std::string message = parse(r)["error"]["message"];
    EXPECT_NE(message.find("vault 'tie-a'"), std::string::npos) << message;
    EXPECT_NE(message.find("vault 'cfgvault'"), std::string::npos) << message;
    EXPECT_NE(message.find("cfg.example.com:443 /"), std::string::npos) << message;
    EXPECT_EQ(publishes(), before);

    // Apart, or with a vault that binds something else, they are fine.
    create_session({{"vault_ids", {a}}});
    create_session({{"vault_ids", {a, b}}});

    // A service that would make a live session's vaults tie is refused too.
    r = call("POST", "/v1/vaults/" + b + "/services",
             json{{"host", "cfg.example.com"}, {"auth_config", {{"type", "bearer"}, {"key", "KEY"}}}}.dump());
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(error_code(r), "binding_conflict");
    // Another path_prefix is more specific, not a tie.
    r = call(
        "POST", "/v1/vaults/" + b + "/services",
        json{
            {"host", "cfg.example.com"}, {"path_prefix", "/v1/"}, {"auth_config", {{"type", "bearer"}, {"key", "KEY"}}}}
            .dump());
    EXPECT_EQ(r.status, 201) << r.body;
    // Two services of one vault that tie are refused, session or not.
    r = call("POST", "/v1/vaults/" + b + "/services",
             json{{"host", "other.example.com"}, {"auth_config", {{"type", "api-key"}, {"key", "KEY"}}}}.dump());
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(error_code(r), "binding_conflict");
}

TEST_F(AdminApiTest, AReloadThatMakesASessionsVaultsTieIsRefused) {
    const std::string a = create_vault("tie-a");
    add_credential(a, "KEY", api_secret);
    add_service(a, "api.example.com", "KEY");
    create_session({{"vault_ids", {a, "cfgvault"}}});
    const int before = publishes();
    try {
        api_->reload_config(parse_config(R"(
vaults:
  - name: cfgvault
    credentials:
      CFG_KEY: { env: VG_ADMIN_TEST_CFG_KEY }
    services:
      - host: api.example.com
        auth: { type: api-key, header: x-api-key, key: CFG_KEY }
egress_policies:
  default: {}
)",
                                         "tie.yaml"));
        FAIL() << "the reload was accepted";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("vault 'tie-a'"), std::string::npos) << what;
        EXPECT_NE(what.find("vault 'cfgvault'"), std::string::npos) << what;
    }
    EXPECT_EQ(publishes(), before);
    EXPECT_EQ(snapshot()->vaults.at("cfgvault").services.at(0).config.host, "cfg.example.com");
}

TEST_F(AdminApiTest, TwoLiveSessionsPinnedToOneSourceRangeAreRefused) {
    const std::string a = create_vault("pinned");
    const json first = create_session({{"vault_ids", {a}}, {"source", "10.1.2.0/24"}});
    auto r = call("POST", "/v1/sessions", json{{"vault_ids", {a}}, {"source", "10.1.2.7/24"}}.dump());
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(error_code(r), "source_conflict");
    EXPECT_NE(parse(r)["error"]["message"].get<std::string>().find(first["id"].get<std::string>()), std::string::npos);
    r = call("POST", "/v1/sessions", json{{"vault_ids", {a}}, {"source", "::ffff:10.1.2.0/120"}}.dump());
    EXPECT_EQ(r.status, 409) << r.body;
    // Narrower or wider ranges are more or less specific, so they are fine.
    create_session({{"vault_ids", {a}}, {"source", "10.1.2.0/25"}});
    create_session({{"vault_ids", {a}}, {"source", "10.1.0.0/16"}});
    // Once the first session is gone, its range is free again.
    EXPECT_EQ(call("DELETE", "/v1/sessions/" + first["id"].get<std::string>()).status, 204);
    create_session({{"vault_ids", {a}}, {"source", "10.1.2.0/24"}});
}

}  // namespace
}  // namespace vaultgate::admin_test
