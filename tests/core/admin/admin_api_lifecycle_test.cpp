// The lifecycle endpoints: deleting a vault, listing and showing sessions,
// vault names wherever an id is taken, the shared TTL limit, and two vaults
// of one session that bind one host.
#include "admin_api_fixture.hpp"
#include "vaultgate/admin/json_views.hpp"
#include "vaultgate/state/session_ttl.hpp"

namespace vaultgate::admin_test {
namespace {

// Saves `data` straight into the store, as a server that stopped earlier left it.
void seed_store(const std::string& path, const StoreData& data) { open_file_store(path, master_key())->save(data); }

StoredSession stored_session(std::string id, std::vector<std::string> vault_ids, std::int64_t expires_at_ms) {
    StoredSession s;
    s.id = std::move(id);
    s.token_digest = token_digest("seeded-token");
    s.vault_ids = std::move(vault_ids);
    s.policy.name = "default";
    s.expires_at_ms = expires_at_ms;
    return s;
}

std::int64_t ms_from_now(std::chrono::seconds delta) {
    return std::chrono::duration_cast<std::chrono::milliseconds>((sys_clock::now() + delta).time_since_epoch()).count();
}

// --- DELETE /v1/vaults/{id} ---

TEST_F(AdminApiTest, DeletingAVaultRemovesItFromTheStoreAndTheSnapshot) {
    const std::string id = create_vault("doomed");
    add_credential(id, "KEY", api_secret);
    add_service(id, "doomed.example.com", "KEY");
    const std::string kept = create_vault("kept");
    ASSERT_TRUE(snapshot()->vaults.count("doomed"));
    const int before = publishes();

    const auto r = call("DELETE", "/v1/vaults/" + id);
    EXPECT_EQ(r.status, 204) << r.body;
    EXPECT_TRUE(r.body.empty());
    EXPECT_EQ(publishes(), before + 1);
    EXPECT_FALSE(snapshot()->vaults.count("doomed"));
    EXPECT_TRUE(snapshot()->vaults.count("kept"));
    EXPECT_EQ(error_code(call("GET", "/v1/vaults/" + id)), "unknown_vault");

    // Saved: a fresh API over the same store no longer has it.
    api_.reset();
    api_ = make_api(parse_config(base_config, "test.yaml"));
    const json list = parse(call("GET", "/v1/vaults"));
    ASSERT_EQ(list["vaults"].size(), 2u);
    EXPECT_EQ(list["vaults"][1]["id"], kept);
    // Its name is free again.
    create_vault("doomed");
}

TEST_F(AdminApiTest, AVaultIsDeletedByNameAndRefusedWhenUnknownOrFromTheConfig) {
    create_vault("by-name");
    EXPECT_EQ(call("DELETE", "/v1/vaults/by-name").status, 204);
    EXPECT_FALSE(snapshot()->vaults.count("by-name"));

    auto r = call("DELETE", "/v1/vaults/by-name");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "unknown_vault");
    r = call("DELETE", "/v1/vaults/vlt_nosuch");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "unknown_vault");

    r = call("DELETE", "/v1/vaults/cfgvault");
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "read_only");
    EXPECT_TRUE(snapshot()->vaults.count("cfgvault"));
}

TEST_F(AdminApiTest, AVaultALiveSessionUsesIsNotDeleted) {
    const std::string id = create_vault("busy");
    add_credential(id, "KEY", api_secret);
    const json one = create_session({{"vault_ids", {id}}});
    const json two = create_session({{"vault_ids", {"busy", "cfgvault"}}});
    const int before = publishes();

    auto r = call("DELETE", "/v1/vaults/" + id);
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(error_code(r), "vault_in_use");
    const std::string message = parse(r)["error"]["message"];
    EXPECT_NE(message.find("2 live sessions"), std::string::npos) << message;
    EXPECT_NE(message.find(one["id"].get<std::string>()), std::string::npos) << message;
    EXPECT_EQ(message.find(one["token"].get<std::string>()), std::string::npos) << message;
    EXPECT_EQ(publishes(), before);
    EXPECT_TRUE(snapshot()->vaults.count("busy"));

    ASSERT_EQ(call("DELETE", "/v1/sessions/" + one["id"].get<std::string>()).status, 204);
    r = call("DELETE", "/v1/vaults/busy");
    EXPECT_EQ(r.status, 409);
    EXPECT_NE(parse(r)["error"]["message"].get<std::string>().find("1 live session ("), std::string::npos) << r.body;
    ASSERT_EQ(call("DELETE", "/v1/sessions/" + two["id"].get<std::string>()).status, 204);
    EXPECT_EQ(call("DELETE", "/v1/vaults/busy").status, 204);
}

TEST_F(AdminApiTest, AnExpiredSessionDoesNotHoldItsVault) {
    api_.reset();
    StoreData data;
    StoredVault vault;
    vault.id = "vlt_aaaaaaaaaaaaaaaaaaaa";
    vault.name = "old";
    data.vaults.push_back(vault);
    data.sessions.push_back(stored_session("ses_expired", {vault.id}, ms_from_now(std::chrono::seconds(-5))));
    seed_store(store_path(), data);
    api_ = make_api(parse_config(base_config, "test.yaml"));

    EXPECT_EQ(call("DELETE", "/v1/vaults/old").status, 204);
    EXPECT_FALSE(snapshot()->vaults.count("old"));
}

TEST_F(AdminApiTest, AVaultDeletionThatCannotBeSavedChangesNothing) {
    const std::string id = create_vault("stays");
    const int before = publishes();
    *fail_saves_ = true;
    const auto r = call("DELETE", "/v1/vaults/" + id);
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(error_code(r), "store_write_failed");
    *fail_saves_ = false;
    EXPECT_EQ(publishes(), before);
    EXPECT_TRUE(snapshot()->vaults.count("stays"));
    EXPECT_EQ(call("GET", "/v1/vaults/" + id).status, 200);
}

// --- GET /v1/sessions ---

TEST_F(AdminApiTest, SessionsAreListedWithMetadataButNeverTheirTokens) {
    const std::string id = create_vault("listed");
    const json inline_policy = {{"allowed_domains", {"pypi.org"}}};
    const json a = create_session(
        {{"vault_ids", {"listed", "cfgvault"}}, {"egress_policy", inline_policy}, {"source", "10.9.0.0/16"}});
    const json b = create_session({{"vault_ids", {id}}, {"egress_policy", "open"}, {"ttl_seconds", 60}});

    const auto r = call("GET", "/v1/sessions");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const auto& s : {a, b}) {
        const std::string token = s["token"];
        EXPECT_EQ(r.body.find(token), std::string::npos) << r.body;
        EXPECT_EQ(r.body.find(token_digest(token)), std::string::npos) << r.body;
    }
    const json list = parse(r)["sessions"];
    ASSERT_EQ(list.size(), 3u) << r.body;

    // The config's session first, marked as such.
    EXPECT_EQ(list[0], json::parse(R"({"id":"default","origin":"config",
        "vaults":[{"id":"cfgvault","name":"cfgvault"}],"egress_policy":"default",
        "source":null,"created_at":null,"expires_at":null})"));

    const json& first = list[1];
    EXPECT_EQ(first["id"], a["id"]);
    EXPECT_EQ(first["origin"], "api");
    EXPECT_EQ(first["vaults"], json::parse(R"([{"id":")" + id + R"(","name":"listed"},
                                               {"id":"cfgvault","name":"cfgvault"}])"));
    EXPECT_EQ(first["egress_policy"], "inline");
    EXPECT_EQ(first["inline_policy"]["allowed_domains"], json::array({"pypi.org"}));
    EXPECT_EQ(first["source"], "10.9.0.0/16");
    EXPECT_EQ(first["expires_at"], a["expires_at"]);
    ASSERT_TRUE(first["created_at"].is_string());
    EXPECT_LE(first["created_at"].get<std::string>(), first["expires_at"].get<std::string>());
    EXPECT_FALSE(first.contains("token"));
    EXPECT_FALSE(first.contains("token_digest"));

    const json& second = list[2];
    EXPECT_EQ(second["id"], b["id"]);
    EXPECT_EQ(second["egress_policy"], "open");
    EXPECT_FALSE(second.contains("inline_policy"));
    EXPECT_TRUE(second["source"].is_null());
    EXPECT_EQ(second["expires_at"], b["expires_at"]);

    // One session by id is the same object as in the list.
    const auto one = call("GET", "/v1/sessions/" + b["id"].get<std::string>());
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(parse(one), second);
    EXPECT_EQ(parse(call("GET", "/v1/sessions/default")), list[0]);
}

TEST_F(AdminApiTest, ExpiredAndDeletedSessionsAreNotShown) {
    api_.reset();
    StoreData data;
    data.sessions.push_back(stored_session("ses_expired", {"cfgvault"}, ms_from_now(std::chrono::seconds(-5))));
    data.sessions.push_back(stored_session("ses_live", {"cfgvault"}, ms_from_now(std::chrono::seconds(600))));
    seed_store(store_path(), data);
    api_ = make_api(parse_config(base_config, "test.yaml"));

    const json list = parse(call("GET", "/v1/sessions"))["sessions"];
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0]["id"], "default");
    EXPECT_EQ(list[1]["id"], "ses_live");
    // Stored before the creation time was kept.
    EXPECT_TRUE(list[1]["created_at"].is_null());

    auto r = call("GET", "/v1/sessions/ses_expired");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "session_not_found");
    ASSERT_EQ(call("DELETE", "/v1/sessions/ses_live").status, 204);
    r = call("GET", "/v1/sessions/ses_live");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "session_not_found");
    EXPECT_EQ(parse(call("GET", "/v1/sessions"))["sessions"].size(), 1u);
}

// --- names wherever ids are taken ---

TEST_F(AdminApiTest, AVaultNameWorksOnEveryVaultPath) {
    const std::string id = create_vault("named");
    add_credential("named", "KEY", api_secret);
    auto r = call("PUT", "/v1/vaults/named/credentials/KEY", json{{"value", rotated_secret}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    const std::string service = add_service("named", "named.example.com", "KEY");
    const json vault = parse(call("GET", "/v1/vaults/named"));
    EXPECT_EQ(vault["id"], id);
    EXPECT_EQ(vault["credentials"][0]["version"], 2);
    EXPECT_EQ(vault["services"][0]["id"], service);
    EXPECT_EQ(call("DELETE", "/v1/vaults/named/services/" + service).status, 204);
    EXPECT_EQ(call("DELETE", "/v1/vaults/named/credentials/KEY").status, 204);
    EXPECT_EQ(snapshot()->vaults.at("named").credentials.size(), 0u);

    // A session names it by name or by id; both are the same vault, stored by id.
    const json s = create_session({{"vault_ids", {"named", id}}});
    const json shown = parse(call("GET", "/v1/sessions/" + s["id"].get<std::string>()));
    EXPECT_EQ(shown["vaults"], json::parse(R"([{"id":")" + id + R"(","name":"named"}])"));

    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"GET", "/v1/vaults/nosuch"},
             {"DELETE", "/v1/vaults/nosuch"},
             {"POST", "/v1/vaults/nosuch/credentials"},
             {"PUT", "/v1/vaults/nosuch/credentials/KEY"},
             {"DELETE", "/v1/vaults/nosuch/credentials/KEY"},
             {"POST", "/v1/vaults/nosuch/services"},
             {"DELETE", "/v1/vaults/nosuch/services/svc_x"},
         }) {
        r = call(method, path, "{}");
        EXPECT_EQ(r.status, 404) << method << " " << path;
        EXPECT_EQ(error_code(r), "unknown_vault") << method << " " << path;
    }
}

TEST_F(AdminApiTest, AnIdIsMatchedBeforeAName) {
    const std::string first = create_vault("first");
    // A vault may be named like another vault's id; the id still names the first.
    const std::string second = create_vault(first);
    EXPECT_EQ(parse(call("GET", "/v1/vaults/" + first))["name"], "first");
    EXPECT_EQ(parse(call("GET", "/v1/vaults/" + second))["name"], first);
}

TEST_F(AdminApiTest, LogsOfAnUnknownVaultAreAnErrorNotAnEmptyList) {
    const std::string id = create_vault("logged");
    AccessLogEntry e;
    e.ts = sys_clock::now();
    e.session = "s1";
    e.vault = "logged";
    e.ingress = "mitm";
    e.host = "logged.example.com";
    e.port = 443;
    log_.write(e);

    for (const std::string& v : {std::string("logged"), id}) {
        const auto r = call("GET", "/v1/logs", "", {{"vault", v}});
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(parse(r)["entries"].size(), 1u) << v;
    }
    auto r = call("GET", "/v1/logs", "", {{"vault", "nosuch"}});
    EXPECT_EQ(r.status, 404) << r.body;
    EXPECT_EQ(error_code(r), "unknown_vault");
    // A deleted vault is unknown too.
    ASSERT_EQ(call("DELETE", "/v1/vaults/" + id).status, 204);
    EXPECT_EQ(call("GET", "/v1/logs", "", {{"vault", "logged"}}).status, 404);
}

// --- the shared TTL limit ---

TEST_F(AdminApiTest, TheSessionTtlLimitIsTheSharedOne) {
    const auto before = std::chrono::ceil<std::chrono::seconds>(sys_clock::now());
    const json s = create_session(json::object());
    const auto after = std::chrono::ceil<std::chrono::seconds>(sys_clock::now());
    const std::string expires = s["expires_at"];
    EXPECT_GE(expires, admin::rfc3339(admin::to_ms(before + default_session_ttl)));
    EXPECT_LE(expires, admin::rfc3339(admin::to_ms(after + default_session_ttl)));

    EXPECT_EQ(call("POST", "/v1/sessions", json{{"ttl_seconds", max_session_ttl.count()}}.dump()).status, 201);
    const auto r = call("POST", "/v1/sessions", json{{"ttl_seconds", max_session_ttl.count() + 1}}.dump());
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_ttl");
    EXPECT_EQ(AdminOptions{}.max_ttl, max_session_ttl);
}

// --- two vaults binding one host ---

TEST_F(AdminApiTest, TwoApiVaultsThatBindOneHostAreRefusedForOneSession) {
    const std::string a = create_vault("tie-one");
    const std::string b = create_vault("tie-two");
    add_credential(a, "KEY", api_secret);
    add_credential(b, "KEY", rotated_secret);
    add_service(a, "same.example.com", "KEY");
    add_service(b, "same.example.com", "KEY");
    const int before = publishes();

    // By name or by id, in either order: refused, naming the host and both vaults.
    for (const json& ids : {json{a, b}, json{"tie-two", "tie-one"}}) {
        const auto r = call("POST", "/v1/sessions", json{{"vault_ids", ids}}.dump());
        EXPECT_EQ(r.status, 409) << r.body;
        EXPECT_EQ(error_code(r), "binding_conflict");
        const std::string message = parse(r)["error"]["message"];
        EXPECT_NE(message.find("same.example.com:443"), std::string::npos) << message;
        EXPECT_NE(message.find("vault 'tie-one'"), std::string::npos) << message;
        EXPECT_NE(message.find("vault 'tie-two'"), std::string::npos) << message;
    }
    EXPECT_EQ(publishes(), before);
    EXPECT_EQ(snapshot()->sessions.size(), 1u);

    // One vault named twice is one vault, not a tie with itself.
    create_session({{"vault_ids", {a, "tie-one"}}});

    // Within one vault the refusal names the host too.
    const auto r =
        call("POST", "/v1/vaults/" + a + "/services",
             json{{"host", "same.example.com"}, {"auth_config", {{"type", "bearer"}, {"key", "KEY"}}}}.dump());
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(error_code(r), "binding_conflict");
    EXPECT_NE(parse(r)["error"]["message"].get<std::string>().find("same.example.com:443 /"), std::string::npos)
        << r.body;
}

}  // namespace
}  // namespace vaultgate::admin_test
