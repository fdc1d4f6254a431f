// The admin API: persistence, failed saves, reloads, and compose_state.
#include "admin_api_fixture.hpp"

namespace vaultgate::admin_test {
namespace {

// --- persistence and failures ---

TEST_F(AdminApiTest, PersistsAcrossRestarts) {
    const std::string id = create_vault("keep");
    add_credential(id, "KEY", api_secret);
    ASSERT_EQ(call("PUT", "/v1/vaults/" + id + "/credentials/KEY", json{{"value", rotated_secret}}.dump()).status, 200);
    const std::string sid = add_service(id, "keep.example.com", "KEY");
    const json session = create_session({{"vault_ids", {id, "cfgvault"}}, {"egress_policy", "open"}});
    const json dead = create_session({{"ttl_seconds", 1}});
    const Session* dying = snapshot()->find_session(dead["id"].get<std::string>());
    ASSERT_NE(dying, nullptr);
    const auto dead_end = *dying->expires_at;
    const json before = parse(call("GET", "/v1/vaults/" + id));
    api_.reset();

    snapshot_.reset();
    // Past the short session's own end: loaded, but not served.
    std::this_thread::sleep_until(dead_end + std::chrono::milliseconds(1));
    api_ = make_api(parse_config(base_config, "test.yaml"));
    const json after = parse(call("GET", "/v1/vaults/" + id));
    EXPECT_EQ(after, before);
    EXPECT_EQ(after["credentials"][0]["version"], 2);
    EXPECT_EQ(after["services"][0]["id"], sid);

    const auto state = snapshot();
    ASSERT_TRUE(state);
    EXPECT_EQ(state->vaults.at("keep").credentials.at("KEY").reveal(), rotated_secret);
    EXPECT_EQ(state->vaults.at("cfgvault").credentials.at("CFG_KEY").reveal(), config_secret);
    const Session* s = state->find_session(session["id"].get<std::string>());
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->token_digest, token_digest(session["token"].get<std::string>()));
    EXPECT_EQ(s->vault_names, (std::vector<std::string>{"keep", "cfgvault"}));
    EXPECT_EQ(s->policy.name, "open");
    EXPECT_EQ(state->find_session(dead["id"].get<std::string>()), nullptr);

    // The name is still taken after the restart.
    EXPECT_EQ(call("POST", "/v1/vaults", R"({"name":"keep"})").status, 409);
}

TEST_F(AdminApiTest, FailedSaveChangesNothing) {
    const std::string id = create_vault("v");
    add_credential(id, "KEY", api_secret);
    const json s = create_session(json::object());
    const std::string before = call("GET", "/v1/vaults/" + id).body;
    const int published = publishes();

    *fail_saves_ = true;
    testing::internal::CaptureStderr();
    const AdminResponse failures[] = {
        call("POST", "/v1/vaults", R"({"name":"w"})"),
        call("POST", "/v1/vaults/" + id + "/credentials", json{{"name", "K2"}, {"value", leak}}.dump()),
        call("PUT", "/v1/vaults/" + id + "/credentials/KEY", json{{"value", rotated_secret}}.dump()),
        call("DELETE", "/v1/vaults/" + id + "/credentials/KEY"),
        call("POST", "/v1/vaults/" + id + "/services",
             json{{"host", "h.example.com"}, {"auth_config", {{"type", "bearer"}, {"key", "KEY"}}}}.dump()),
        call("POST", "/v1/sessions", "{}"),
        call("DELETE", "/v1/sessions/" + s["id"].get<std::string>()),
    };
    const std::string diagnostics = testing::internal::GetCapturedStderr();
    *fail_saves_ = false;

    for (const auto& r : failures) {
        EXPECT_EQ(r.status, 500) << r.body;
        EXPECT_EQ(error_code(r), "store_write_failed");
        EXPECT_EQ(r.body.find("disk full"), std::string::npos) << "details stay in the operator's log";
    }
    EXPECT_NE(diagnostics.find("disk full"), std::string::npos);
    for (const char* marker : secret_markers) EXPECT_EQ(diagnostics.find(marker), std::string::npos);

    EXPECT_EQ(publishes(), published);
    EXPECT_EQ(call("GET", "/v1/vaults/" + id).body, before);
    EXPECT_EQ(parse(call("GET", "/v1/vaults"))["vaults"].size(), 2u);
    EXPECT_EQ(snapshot()->vaults.at("v").credentials.at("KEY").reveal(), api_secret);
    EXPECT_NE(snapshot()->find_session(s["id"].get<std::string>()), nullptr);
    EXPECT_TRUE(closed().empty());

    // And it works again once the store does.
    EXPECT_EQ(call("POST", "/v1/vaults", R"({"name":"w"})").status, 201);
}

TEST_F(AdminApiTest, ExpiryWithFailingStoreStillEndsTheSession) {
    const json s = create_session({{"ttl_seconds", 1}});
    *fail_saves_ = true;
    testing::internal::CaptureStderr();
    const auto expired = api_->expire_sessions(sys_clock::now() + std::chrono::seconds(5));
    testing::internal::GetCapturedStderr();
    *fail_saves_ = false;
    EXPECT_EQ(expired.size(), 1u);
    EXPECT_EQ(snapshot()->find_session(s["id"].get<std::string>()), nullptr);
}

TEST_F(AdminApiTest, CorruptStoreFailsLoad) {
    {
        std::ofstream out(store_path(), std::ios::binary | std::ios::trunc);
        out << "not a store";
    }
    auto api = make_api(parse_config(base_config, "test.yaml"), false);
    EXPECT_THROW(api->load(), StoreError);
}

// --- reload ---

TEST_F(AdminApiTest, ReloadConfig) {
    const std::string id = create_vault("newvault");
    add_credential(id, "KEY", api_secret);
    const json named = create_session({{"vault_ids", {id, "cfgvault"}}, {"egress_policy", "open"}});
    const std::string sid = named["id"];

    // A config vault that takes an API vault's name is refused; the old config stays.
    const int before = publishes();
    EXPECT_THROW(api_->reload_config(parse_config(R"(
vaults:
  - name: newvault
)",
                                                  "clash.yaml")),
                 ConfigError);
    EXPECT_EQ(publishes(), before);
    EXPECT_EQ(call("GET", "/v1/vaults/cfgvault").status, 200);

    ScopedEnv other("VG_ADMIN_TEST_OTHER", "other-value");
    api_->reload_config(parse_config(R"(
vaults:
  - name: other
    credentials:
      K: { env: VG_ADMIN_TEST_OTHER }
egress_policies:
  open:
    allow_http: false
    allowed_domains: [only.example.net]
)",
                                     "new.yaml"));
    const auto state = snapshot();
    EXPECT_TRUE(state->vaults.count("other"));
    EXPECT_FALSE(state->vaults.count("cfgvault"));
    EXPECT_EQ(state->vaults.at("newvault").credentials.at("KEY").reveal(), api_secret);
    EXPECT_FALSE(state->default_session.has_value());
    const Session* s = state->find_session(sid);
    ASSERT_NE(s, nullptr);
    // The config vault is gone from the session; the named policy follows the config.
    EXPECT_EQ(s->vault_names, std::vector<std::string>{"newvault"});
    EXPECT_FALSE(s->policy.allow_http);
    ASSERT_EQ(s->policy.allowed_domains.size(), 1u);
    EXPECT_EQ(s->policy.allowed_domains[0].host, "only.example.net");

    EXPECT_EQ(call("GET", "/v1/vaults/cfgvault").status, 404);
    EXPECT_EQ(call("GET", "/v1/vaults/other").status, 200);
    EXPECT_EQ(call("POST", "/v1/vaults", R"({"name":"other"})").status, 409);
    EXPECT_EQ(call("POST", "/v1/vaults", R"({"name":"cfgvault"})").status, 201);

    // A policy the config dropped allows nothing.
    api_->reload_config(parse_config("vaults: []\n", "empty.yaml"));
    const Session* dropped = snapshot()->find_session(sid);
    ASSERT_NE(dropped, nullptr);
    EXPECT_FALSE(dropped->policy.allow_https);
    EXPECT_TRUE(dropped->policy.allowed_domains.empty());
}

// API vaults: a credential inside its own placeholder is warned about when its
// tables are first (not) built, and not again on later publishes that change
// nothing for it; the service keeps having no tables, so requests get 502.
TEST(ComposeState, APlaceholderCollisionIsWarnedAboutOnceAcrossPublishes) {
    StoreData data;
    StoredVault v;
    v.id = "vlt_1";
    v.name = "api";
    StoredCredential cred;
    cred.name = "SHORT";
    cred.value = Secret(std::string("place"));
    v.credentials.push_back(std::move(cred));
    StoredService svc;
    svc.id = "svc_1";
    svc.config.host = "redacted.test";
    svc.config.auth.key = "SHORT";
    svc.config.redact_response = true;
    v.services.push_back(svc);
    data.vaults.push_back(std::move(v));
    const Config config;
    const GatewayState config_state;
    const auto now = std::chrono::system_clock::now();

    std::vector<std::string> warnings;
    const auto first = compose_state(config_state, config, data, now, nullptr, &warnings);
    EXPECT_EQ(first->vaults.at("api").services.at(0).redaction, nullptr);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("credential SHORT occurs in its redaction placeholder"), std::string::npos)
        << warnings[0];

    warnings.clear();
    const auto second = compose_state(config_state, config, data, now, first.get(), &warnings);
    EXPECT_EQ(second->vaults.at("api").services.at(0).redaction, nullptr);
    EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace vaultgate::admin_test
