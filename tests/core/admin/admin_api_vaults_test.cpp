// The admin API: vaults, credentials and services.
#include "admin_api_fixture.hpp"

namespace vaultgate::admin_test {
namespace {

// --- vaults ---

TEST_F(AdminApiTest, VaultCreateListGet) {
    const auto r = call("POST", "/v1/vaults", R"({"name":"team-a.prod_1"})");
    ASSERT_EQ(r.status, 201);
    const json created = parse(r);
    const std::string id = created["id"];
    EXPECT_TRUE(id.starts_with("vlt_")) << id;
    EXPECT_EQ(created["name"], "team-a.prod_1");

    const json list = parse(call("GET", "/v1/vaults"));
    ASSERT_EQ(list["vaults"].size(), 2u);
    EXPECT_EQ(list["vaults"][0]["id"], "cfgvault");
    EXPECT_EQ(list["vaults"][0]["source"], "config");
    EXPECT_EQ(list["vaults"][1]["id"], id);
    EXPECT_EQ(list["vaults"][1]["source"], "api");

    const json one = parse(call("GET", "/v1/vaults/" + id));
    EXPECT_EQ(one["id"], id);
    EXPECT_EQ(one["name"], "team-a.prod_1");
    EXPECT_EQ(one["source"], "api");
    EXPECT_EQ(one["credentials"], json::array());
    EXPECT_EQ(one["services"], json::array());

    auto missing = call("GET", "/v1/vaults/vlt_nosuch");
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(error_code(missing), "unknown_vault");
    // A name works wherever an id does.
    const auto by_name = call("GET", "/v1/vaults/team-a.prod_1");
    EXPECT_EQ(by_name.status, 200) << by_name.body;
    EXPECT_EQ(parse(by_name)["id"], id);
    EXPECT_EQ(error_code(call("GET", "/v1/vaults/no-such-name")), "unknown_vault");

    ASSERT_TRUE(snapshot()->vaults.count("team-a.prod_1"));
    EXPECT_EQ(snapshot()->vaults.at("team-a.prod_1").id, id);
    EXPECT_FALSE(snapshot()->vaults.at("team-a.prod_1").from_config);
}

TEST_F(AdminApiTest, VaultNameRules) {
    for (const std::string& body :
         {json{{"name", ""}}.dump(), json{{"name", std::string(129, 'a')}}.dump(), json{{"name", "a/b"}}.dump(),
          json{{"name", ".."}}.dump(), json{{"name", "a b"}}.dump(), json{{"name", leak + "!"}}.dump()}) {
        const auto r = call("POST", "/v1/vaults", body);
        EXPECT_EQ(r.status, 400) << body;
        EXPECT_EQ(error_code(r), "invalid_name") << body;
    }
    // The config file's limit: a vault name is valid in both or in neither.
    EXPECT_EQ(call("POST", "/v1/vaults", json{{"name", std::string(128, 'a')}}.dump()).status, 201);
    EXPECT_EQ(error_code(call("POST", "/v1/vaults", R"({"name":5})")), "invalid_request");
    EXPECT_EQ(error_code(call("POST", "/v1/vaults", R"({})")), "invalid_request");
    EXPECT_EQ(error_code(call("POST", "/v1/vaults", R"({"name":"x","extra":1})")), "invalid_request");

    create_vault("dup");
    auto r = call("POST", "/v1/vaults", R"({"name":"dup"})");
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "name_taken");
    r = call("POST", "/v1/vaults", R"({"name":"cfgvault"})");
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "name_taken");
}

// --- credentials ---

TEST_F(AdminApiTest, CredentialLifecycle) {
    const std::string id = create_vault("v");
    auto r = call("POST", "/v1/vaults/" + id + "/credentials", json{{"name", "API_KEY"}, {"value", api_secret}}.dump());
    ASSERT_EQ(r.status, 201);
    EXPECT_EQ(parse(r), json({{"name", "API_KEY"}, {"version", 1}}));
    EXPECT_EQ(snapshot()->vaults.at("v").credentials.at("API_KEY").reveal(), api_secret);

    r = call("POST", "/v1/vaults/" + id + "/credentials", json{{"name", "API_KEY"}, {"value", rotated_secret}}.dump());
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "credential_exists");
    EXPECT_EQ(snapshot()->vaults.at("v").credentials.at("API_KEY").reveal(), api_secret);

    json vault = parse(call("GET", "/v1/vaults/" + id));
    ASSERT_EQ(vault["credentials"].size(), 1u);
    json cred = vault["credentials"][0];
    EXPECT_EQ(cred["name"], "API_KEY");
    EXPECT_EQ(cred["version"], 1);
    EXPECT_EQ(cred["fingerprint"], credential_fingerprint(master_key(), api_secret));
    EXPECT_TRUE(cred["updated_at"].get<std::string>().ends_with("Z"));
    EXPECT_FALSE(cred.contains("value"));
    const std::string first_fingerprint = cred["fingerprint"];

    const int before = publishes();
    r = call("PUT", "/v1/vaults/" + id + "/credentials/API_KEY", json{{"value", rotated_secret}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(parse(r), json({{"name", "API_KEY"}, {"version", 2}}));
    // Published before the answer: the next request through the proxy uses it.
    EXPECT_EQ(publishes(), before + 1);
    EXPECT_EQ(snapshot()->vaults.at("v").credentials.at("API_KEY").reveal(), rotated_secret);

    cred = parse(call("GET", "/v1/vaults/" + id))["credentials"][0];
    EXPECT_EQ(cred["version"], 2);
    EXPECT_NE(cred["fingerprint"], first_fingerprint);

    r = call("PUT", "/v1/vaults/" + id + "/credentials/NOPE", json{{"value", rotated_secret}}.dump());
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "credential_not_found");
    r = call("PUT", "/v1/vaults/vlt_none/credentials/API_KEY", json{{"value", rotated_secret}}.dump());
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "unknown_vault");
    r = call("PUT", "/v1/vaults/" + id + "/credentials/API_KEY", json{{"value", ""}}.dump());
    EXPECT_EQ(error_code(r), "invalid_value");

    r = call("DELETE", "/v1/vaults/" + id + "/credentials/API_KEY");
    EXPECT_EQ(r.status, 204);
    EXPECT_TRUE(r.body.empty());
    EXPECT_FALSE(snapshot()->vaults.at("v").credentials.count("API_KEY"));
    r = call("DELETE", "/v1/vaults/" + id + "/credentials/API_KEY");
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "credential_not_found");
}

TEST_F(AdminApiTest, CredentialValidationNeverEchoesValues) {
    const std::string id = create_vault("v");
    const std::string path = "/v1/vaults/" + id + "/credentials";
    struct Case {
        json body;
        const char* code;
    };
    const Case cases[] = {
        {{{"name", "K"}, {"value", ""}}, "invalid_value"},
        {{{"name", "K"}, {"value", leak + "\r\nX-Evil: 1"}}, "invalid_value"},
        {{{"name", "K"}, {"value", leak + "\n"}}, "invalid_value"},
        {{{"name", "K"}, {"value", leak + std::string(1, '\0')}}, "invalid_value"},
        {{{"name", "K"}, {"value", leak + "\x01"}}, "invalid_value"},
        {{{"name", "K"}, {"value", leak + std::string(16 * 1024, 'x')}}, "invalid_value"},
        {{{"name", "K"}, {"value", 12345}}, "invalid_request"},
        {{{"name", "K"}}, "invalid_request"},
        {{{"value", leak}}, "invalid_request"},
        {{{"name", "K"}, {"valeu", leak}}, "invalid_request"},
        {{{"name", "K"}, {leak, "x"}}, "invalid_request"},
        {{{"name", leak + "/x"}, {"value", "v"}}, "invalid_name"},
        {{{"name", std::string(129, 'a')}, {"value", "v"}}, "invalid_name"},
        {{{"name", "."}, {"value", "v"}}, "invalid_name"},
    };
    for (const auto& c : cases) {
        const auto r = call("POST", path, c.body.dump());
        EXPECT_EQ(r.status, 400) << c.body.dump().substr(0, 80);
        EXPECT_EQ(error_code(r), c.code) << c.body.dump().substr(0, 80);
    }
    EXPECT_TRUE(snapshot()->vaults.at("v").credentials.empty());

    // The limits themselves are accepted.
    add_credential(id, std::string(128, 'a'), std::string(16 * 1024, 'x'));
    add_credential(id, "TAB_FREE", "a-b_c.d~e+f/g=h");
}

// --- services ---

TEST_F(AdminApiTest, Services) {
    const std::string id = create_vault("v");
    add_credential(id, "TOKEN", api_secret);

    const json body = {{"host", "API.Example.com"},
                       {"port", 8443},
                       {"path_prefix", "/v2"},
                       {"auth_config", {{"type", "api-key"}, {"header", "x-api-key"}, {"key", "TOKEN"}}},
                       {"redact_response", true}};
    auto r = call("POST", "/v1/vaults/" + id + "/services", body.dump());
    ASSERT_EQ(r.status, 201) << r.body;
    const json svc = parse(r);
    const std::string sid = svc["id"];
    EXPECT_TRUE(sid.starts_with("svc_"));
    EXPECT_EQ(svc["host"], "api.example.com");
    EXPECT_EQ(svc["port"], 8443);
    EXPECT_EQ(svc["path_prefix"], "/v2");
    EXPECT_EQ(svc["auth_config"]["key"], "TOKEN");
    EXPECT_EQ(svc["redact_response"], true);

    const Vault& vault = snapshot()->vaults.at("v");
    ASSERT_EQ(vault.services.size(), 1u);
    EXPECT_EQ(vault.services[0].id, sid);
    EXPECT_EQ(vault.services[0].config.host, "api.example.com");
    // The published state carries the service's redaction tables, built from
    // the vault's credential.
    ASSERT_NE(vault.services[0].redaction, nullptr);
    EXPECT_EQ(vault.services[0].redaction->redact_all(api_secret), "vaultgate-placeholder-TOKEN");

    // Another change publishes a new state; this service's inputs did not
    // change, so it keeps the very same tables.
    const auto tables = vault.services[0].redaction;
    create_vault("unrelated");
    EXPECT_EQ(snapshot()->vaults.at("v").services[0].redaction, tables);
    // A rotated credential gets tables of its own: the new value is redacted.
    ASSERT_EQ(
        call("PUT", "/v1/vaults/" + id + "/credentials/TOKEN", json{{"value", "sk-rotated-value-42"}}.dump()).status,
        200);
    const auto rotated = snapshot()->vaults.at("v").services[0].redaction;
    ASSERT_NE(rotated, nullptr);
    EXPECT_NE(rotated, tables);
    EXPECT_EQ(rotated->redact_all("sk-rotated-value-42"), "vaultgate-placeholder-TOKEN");
    EXPECT_FALSE(rotated->contains_secret(api_secret));

    const json got = parse(call("GET", "/v1/vaults/" + id));
    ASSERT_EQ(got["services"].size(), 1u);
    EXPECT_EQ(got["services"][0], svc);

    // The key must name a credential of this vault.
    json bad = body;
    bad["auth_config"]["key"] = "OTHER";
    r = call("POST", "/v1/vaults/" + id + "/services", bad.dump());
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "unknown_credential");
    bad = body;
    bad["host"] = "*.com";
    r = call("POST", "/v1/vaults/" + id + "/services", bad.dump());
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_service");
    bad = body;
    bad["auth_config"]["key"] = leak + "!";
    EXPECT_EQ(error_code(call("POST", "/v1/vaults/" + id + "/services", bad.dump())), "invalid_service");
    bad = body;
    bad["auth_config"]["header"] = "Host";
    EXPECT_EQ(error_code(call("POST", "/v1/vaults/" + id + "/services", bad.dump())), "invalid_service");

    // A credential in use stays until its service is gone.
    r = call("DELETE", "/v1/vaults/" + id + "/credentials/TOKEN");
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "credential_in_use");

    r = call("DELETE", "/v1/vaults/" + id + "/services/" + sid);
    EXPECT_EQ(r.status, 204);
    EXPECT_TRUE(snapshot()->vaults.at("v").services.empty());
    r = call("DELETE", "/v1/vaults/" + id + "/services/" + sid);
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_code(r), "service_not_found");
    EXPECT_EQ(call("DELETE", "/v1/vaults/" + id + "/credentials/TOKEN").status, 204);
}

TEST_F(AdminApiTest, ServicesAreNeverBoundToThisMachineVaultgateOrAPublicSuffix) {
    const std::string id = create_vault("v");
    add_credential(id, "TOKEN", api_secret);
    // base_config listens on the defaults: proxy 127.0.0.1:3128, admin 127.0.0.1:3190.
    const struct {
        const char* host;
        int port;
        const char* code;
    } refused[] = {
        {"127.0.0.1", 443, "forbidden_address"},
        {"0.0.0.0", 443, "forbidden_address"},
        {"::1", 443, "forbidden_address"},
        {"[::1]", 443, "forbidden_address"},
        {"169.254.169.254", 443, "forbidden_address"},
        {"[fd00:ec2::254]", 443, "forbidden_address"},
        {"fe80::1", 443, "forbidden_address"},
        {"localhost", 443, "forbidden_address"},
        {"LocalHost.", 443, "forbidden_address"},
        {"127.0.0.1", 3128, "own_listener"},
        {"127.0.0.1", 3190, "own_listener"},
        {"*.co.uk", 443, "public_suffix_wildcard"},
        {"*.github.io", 443, "public_suffix_wildcard"},
    };
    for (const auto& c : refused) {
        const json body = {{"host", c.host}, {"port", c.port}, {"auth_config", {{"type", "bearer"}, {"key", "TOKEN"}}}};
        const auto r = call("POST", "/v1/vaults/" + id + "/services", body.dump());
        EXPECT_EQ(r.status, 400) << c.host << ": " << r.body;
        EXPECT_EQ(error_code(r), c.code) << c.host << ": " << r.body;
        EXPECT_TRUE(parse(r)["error"]["message"].get<std::string>().starts_with("host: ")) << r.body;
    }
    // "*.com" is refused earlier, by the host rule itself.
    EXPECT_EQ(error_code(call("POST", "/v1/vaults/" + id + "/services",
                              json{{"host", "*.com"}, {"auth_config", {{"type", "bearer"}, {"key", "TOKEN"}}}}.dump())),
              "invalid_service");
    EXPECT_TRUE(snapshot()->vaults.at("v").services.empty());
    for (const char* host : {"*.example.co.uk", "10.1.2.3", "api.example.com"}) add_service(id, host, "TOKEN");
    EXPECT_EQ(snapshot()->vaults.at("v").services.size(), 3u);
}

TEST_F(AdminApiTest, BodiesThatNameAKeyTwiceAreRefused) {
    const std::string id = create_vault("v");
    add_credential(id, "TOKEN", api_secret);
    const int before = publishes();
    const std::pair<std::string, std::string> requests[] = {
        {"/v1/vaults", R"({"name":"a","name":"b"})"},
        {"/v1/vaults/" + id + "/credentials", R"({"name":"K2","value":"x-LEAKME-1","value":"x-LEAKME-2"})"},
        {"/v1/vaults/" + id + "/services",
         R"({"host":"api.example.com","auth_config":{"type":"bearer","key":"TOKEN","key":"OTHER"}})"},
        {"/v1/sessions", R"({"vault_ids":["v"],"egress_policy":{"allowed_domains":[],"allowed_domains":["*.x.org"]}})"},
    };
    for (const auto& [path, body] : requests) {
        const auto r = call("POST", path, body);
        EXPECT_EQ(r.status, 400) << path << ": " << r.body;
        EXPECT_EQ(error_code(r), "duplicate_key") << path << ": " << r.body;
    }
    EXPECT_EQ(publishes(), before);
    EXPECT_EQ(snapshot()->vaults.count("a") + snapshot()->vaults.count("b"), 0u);
}

TEST_F(AdminApiTest, ConfigVaultsAreReadOnly) {
    const std::string base = "/v1/vaults/cfgvault";
    const json service = {{"host", "x.example.com"}, {"auth_config", {{"type", "bearer"}, {"key", "CFG_KEY"}}}};
    const std::pair<std::string, std::string> requests[] = {
        {"POST", base + "/credentials"},           {"PUT", base + "/credentials/CFG_KEY"},
        {"DELETE", base + "/credentials/CFG_KEY"}, {"POST", base + "/services"},
        {"DELETE", base + "/services/cfgvault/0"},
    };
    const int before = publishes();
    for (const auto& [method, path] : requests) {
        const std::string body = method == "POST" && path.ends_with("services")
                                     ? service.dump()
                                     : json{{"name", "NEW"}, {"value", api_secret}}.dump();
        const auto r = call(method, path, body);
        if (path.ends_with("cfgvault/0")) {
            // The config service id has a slash, so it is not one path segment.
            EXPECT_EQ(r.status, 404) << path;
            continue;
        }
        EXPECT_EQ(r.status, 409) << method << " " << path;
        EXPECT_EQ(error_code(r), "read_only") << method << " " << path;
    }
    const auto r = call("DELETE", base + "/services/whatever");
    EXPECT_EQ(r.status, 409);
    EXPECT_EQ(error_code(r), "read_only");
    EXPECT_EQ(publishes(), before);

    const json vault = parse(call("GET", base));
    EXPECT_EQ(vault["id"], "cfgvault");
    EXPECT_EQ(vault["source"], "config");
    ASSERT_EQ(vault["credentials"].size(), 2u);
    const json& cfg = vault["credentials"][0];
    EXPECT_EQ(cfg["name"], "CFG_KEY");
    EXPECT_EQ(cfg["version"], 1);
    EXPECT_EQ(cfg["fingerprint"], credential_fingerprint(master_key(), config_secret));
    EXPECT_FALSE(cfg.contains("missing"));
    const json& missing = vault["credentials"][1];
    EXPECT_EQ(missing["name"], "MISSING_KEY");
    EXPECT_EQ(missing["missing"], true);
    EXPECT_FALSE(missing.contains("fingerprint"));
    ASSERT_EQ(vault["services"].size(), 1u);
    EXPECT_EQ(vault["services"][0]["id"], "cfgvault/0");
    EXPECT_EQ(vault["services"][0]["host"], "cfg.example.com");
}

}  // namespace
}  // namespace vaultgate::admin_test
