// The admin API against the real encrypted file store, a real AccessLog and
// real Metrics. Every response body the fixture sees is kept, and at the end of
// each test none of them may hold any credential value used in it.
#include "temp_dir.hpp"
#include "vaultgate/admin/admin_api.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/vault/store.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>

namespace vaultgate {
namespace {

using nlohmann::json;
using sys_clock = std::chrono::system_clock;

// Every value used as a credential (or pasted where one does not belong)
// carries one of these markers; no response may contain any of them.
const char* const secret_markers[] = {"aaa111", "bbb222", "ccc333", "LEAKME"};
const std::string api_secret = "sk-live-SECRET-aaa111zz";
const std::string rotated_secret = "sk-live-SECRET-bbb222yy";
const std::string config_secret = "cfg-SECRET-ccc333xx";
const std::string leak = "sk-LEAKME-0123456789abcdef";

using test::ScopedEnv;
using test::TempDir;

// A store whose saves can be made to fail, around the real file store.
class FlakyStore final : public VaultStore {
public:
    FlakyStore(std::unique_ptr<VaultStore> inner, std::shared_ptr<std::atomic<bool>> fail)
        : inner_(std::move(inner)), fail_(std::move(fail)) {}
    StoreData load() override { return inner_->load(); }
    void save(const StoreData& data) override {
        if (*fail_) throw StoreError("test store: disk full");
        inner_->save(data);
    }
    std::string describe() const override { return "flaky " + inner_->describe(); }

private:
    std::unique_ptr<VaultStore> inner_;
    std::shared_ptr<std::atomic<bool>> fail_;
};

Secret master_key() { return Secret(std::string(32, 'k')); }

const char* const base_config = R"(
vaults:
  - name: cfgvault
    credentials:
      CFG_KEY: { env: VG_ADMIN_TEST_CFG_KEY }
      MISSING_KEY: { env: VG_ADMIN_TEST_MISSING }
    services:
      - host: cfg.example.com
        auth: { type: api-key, header: x-api-key, key: CFG_KEY }
sessions:
  default: { vaults: [cfgvault], egress_policy: default }
egress_policies:
  default:
    allowed_domains: [pypi.org]
  open:
    allow_http: true
    allowed_domains: ["*.example.org"]
)";

class AdminApiTest : public ::testing::Test {
protected:
    AdminApiTest()
        : cfg_env_("VG_ADMIN_TEST_CFG_KEY", config_secret.c_str()),
          missing_env_("VG_ADMIN_TEST_MISSING", nullptr),
          log_(dir_.file("access.log")) {}

    void SetUp() override { api_ = make_api(parse_config(base_config, "test.yaml")); }

    void TearDown() override {
        for (const auto& body : bodies_)
            for (const char* marker : secret_markers)
                EXPECT_EQ(body.find(marker), std::string::npos) << "a response holds a secret: " << body;
    }

    std::unique_ptr<AdminApi> make_api(Config config, bool load = true) {
        AdminOptions options;
        options.proxy_url = "http://127.0.0.1:3128";
        options.ca_cert_pem = "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n";
        options.max_ttl = std::chrono::seconds(86400);
        options.max_body = 64 * 1024;
        auto store = std::make_unique<FlakyStore>(open_file_store(store_path(), master_key()), fail_saves_);
        auto api = std::make_unique<AdminApi>(
            std::move(config), std::move(store), master_key(), options,
            [this](std::shared_ptr<const GatewayState> s) {
                std::lock_guard lock(mutex_);
                snapshot_ = std::move(s);
                ++publishes_;
            },
            &log_, &metrics_, [] { return MetricsExtras{42, 7, 3, 5, 9}; });
        api->on_session_closed = [this](const std::string& id) {
            std::lock_guard lock(mutex_);
            closed_.push_back(id);
        };
        if (load) api->load();
        return api;
    }

    std::string store_path() const { return dir_.file("vaultgate.db"); }

    AdminResponse call(const std::string& method, const std::string& path, const std::string& body = "",
                       std::map<std::string, std::string> query = {}) {
        return call_on(*api_, method, path, body, std::move(query));
    }

    AdminResponse call_on(AdminApi& api, const std::string& method, const std::string& path,
                          const std::string& body = "", std::map<std::string, std::string> query = {}) {
        AdminRequest req{method, path, std::move(query), body};
        AdminResponse r = api.handle(req);
        wipe_string(req.body);
        std::lock_guard lock(mutex_);
        bodies_.push_back(r.body);
        for (const auto& [name, value] : r.headers) bodies_.push_back(value);
        return r;
    }

    static json parse(const AdminResponse& r) { return json::parse(r.body); }

    // Asserts the error shape and returns the code.
    static std::string error_code(const AdminResponse& r) {
        const json j = json::parse(r.body);
        EXPECT_TRUE(j.contains("error")) << r.body;
        EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
        return j["error"]["code"].get<std::string>();
    }

    std::string create_vault(const std::string& name) {
        const auto r = call("POST", "/v1/vaults", json{{"name", name}}.dump());
        EXPECT_EQ(r.status, 201) << r.body;
        return parse(r)["id"].get<std::string>();
    }

    void add_credential(const std::string& vault_id, const std::string& name, const std::string& value) {
        const auto r = call("POST", "/v1/vaults/" + vault_id + "/credentials", json{{"name", name}, {"value", value}}.dump());
        EXPECT_EQ(r.status, 201) << r.body;
    }

    std::string add_service(const std::string& vault_id, const std::string& host, const std::string& key) {
        const json body = {{"host", host}, {"auth_config", {{"type", "bearer"}, {"key", key}}}};
        const auto r = call("POST", "/v1/vaults/" + vault_id + "/services", body.dump());
        EXPECT_EQ(r.status, 201) << r.body;
        return parse(r)["id"].get<std::string>();
    }

    json create_session(const json& body) {
        const auto r = call("POST", "/v1/sessions", body.dump());
        EXPECT_EQ(r.status, 201) << r.body;
        return parse(r);
    }

    std::shared_ptr<const GatewayState> snapshot() {
        std::lock_guard lock(mutex_);
        return snapshot_;
    }
    int publishes() {
        std::lock_guard lock(mutex_);
        return publishes_;
    }
    std::vector<std::string> closed() {
        std::lock_guard lock(mutex_);
        return closed_;
    }

    TempDir dir_;
    ScopedEnv cfg_env_;
    ScopedEnv missing_env_;
    AccessLog log_;
    Metrics metrics_;
    std::shared_ptr<std::atomic<bool>> fail_saves_ = std::make_shared<std::atomic<bool>>(false);
    std::unique_ptr<AdminApi> api_;

    std::mutex mutex_;
    std::shared_ptr<const GatewayState> snapshot_;
    int publishes_ = 0;
    std::vector<std::string> closed_;
    std::vector<std::string> bodies_;
};

// --- plumbing ---

TEST_F(AdminApiTest, HealthzAndRouting) {
    auto r = call("GET", "/healthz");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(parse(r), json({{"status", "ok"}}));

    r = call("POST", "/healthz");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(error_code(r), "method_not_allowed");
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Allow", "GET"}));

    r = call("DELETE", "/v1/vaults");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.headers.at(0).second, "GET, POST");
    EXPECT_EQ(call("GET", "/v1/vaults/x/credentials/K").status, 405);
    EXPECT_EQ(call("GET", "/v1/sessions").status, 405);

    for (const char* path : {"/", "", "/nope", "/v1", "/v1/", "/v1/vaults/", "/v1//vaults", "/v2/vaults",
                             "/v1/vaults/x/other", "/v1/vaults/x/credentials/K/more", "/v1/logs/x",
                             "/healthz/x", "/v1/sessions/a/b"}) {
        r = call("GET", path);
        EXPECT_EQ(r.status, 404) << path;
        EXPECT_EQ(error_code(r), "not_found") << path;
    }
}

TEST_F(AdminApiTest, Metrics) {
    metrics_.denial("domain_not_allowed");
    const auto r = call("GET", "/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "text/plain; version=0.0.4");
    EXPECT_NE(r.body.find("vaultgate_cert_cache_hits_total 42"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("vaultgate_cert_cache_misses_total 7"), std::string::npos);
    EXPECT_NE(r.body.find("vaultgate_access_log_dropped_lines_total 3"), std::string::npos);
    EXPECT_NE(r.body.find("vaultgate_upstream_pooled_connections 5"), std::string::npos);
    EXPECT_NE(r.body.find("\nvaultgate_block_cache_bytes 9\n"), std::string::npos);
    EXPECT_NE(r.body.find("reason=\"domain_not_allowed\""), std::string::npos);
    EXPECT_EQ(call("PUT", "/metrics").status, 405);
}

TEST_F(AdminApiTest, BodyErrors) {
    auto r = call("POST", "/v1/vaults", "{\"name\":");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_json");
    // A truncated body around a value: the parser's context must not come back.
    r = call("POST", "/v1/vaults", "{\"name\":\"v\",\"value\":\"" + leak);
    EXPECT_EQ(error_code(r), "invalid_json");
    r = call("POST", "/v1/vaults", "");
    EXPECT_EQ(error_code(r), "invalid_json");
    r = call("POST", "/v1/vaults", "[\"v\"]");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_request");
    r = call("POST", "/v1/vaults", std::string(100000, '['));
    EXPECT_EQ(r.status, 413);
    EXPECT_EQ(error_code(r), "body_too_large");
    r = call("POST", "/v1/vaults", std::string(1000, '[') + std::string(1000, ']'));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_json");
    // Brackets inside strings do not count as nesting.
    r = call("POST", "/v1/vaults", json{{"name", "x"}, {"zz", std::string(100, '[')}}.dump());
    EXPECT_EQ(error_code(r), "invalid_request");
}

TEST_F(AdminApiTest, NotReadyBeforeLoad) {
    auto api = make_api(parse_config(base_config, "test.yaml"), false);
    EXPECT_EQ(call_on(*api, "GET", "/healthz").status, 200);
    const auto r = call_on(*api, "POST", "/v1/vaults", R"({"name":"early"})");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(error_code(r), "not_ready");
}

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
    EXPECT_EQ(error_code(missing), "vault_not_found");
    // API vaults are addressed by id, not by name.
    EXPECT_EQ(call("GET", "/v1/vaults/team-a.prod_1").status, 404);

    ASSERT_TRUE(snapshot()->vaults.count("team-a.prod_1"));
    EXPECT_EQ(snapshot()->vaults.at("team-a.prod_1").id, id);
    EXPECT_FALSE(snapshot()->vaults.at("team-a.prod_1").from_config);
}

TEST_F(AdminApiTest, VaultNameRules) {
    for (const std::string& body : {json{{"name", ""}}.dump(), json{{"name", std::string(129, 'a')}}.dump(),
                                    json{{"name", "a/b"}}.dump(), json{{"name", ".."}}.dump(),
                                    json{{"name", "a b"}}.dump(), json{{"name", leak + "!"}}.dump()}) {
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
    EXPECT_EQ(error_code(r), "vault_not_found");
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
    ASSERT_EQ(call("PUT", "/v1/vaults/" + id + "/credentials/TOKEN", json{{"value", "sk-rotated-value-42"}}.dump())
                  .status,
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
        {"127.0.0.1", 443, "forbidden_address"},      {"0.0.0.0", 443, "forbidden_address"},
        {"::1", 443, "forbidden_address"},            {"[::1]", 443, "forbidden_address"},
        {"169.254.169.254", 443, "forbidden_address"}, {"[fd00:ec2::254]", 443, "forbidden_address"},
        {"fe80::1", 443, "forbidden_address"},        {"localhost", 443, "forbidden_address"},
        {"LocalHost.", 443, "forbidden_address"},     {"127.0.0.1", 3128, "own_listener"},
        {"127.0.0.1", 3190, "own_listener"},          {"*.co.uk", 443, "public_suffix_wildcard"},
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
        {"POST", base + "/credentials"},
        {"PUT", base + "/credentials/CFG_KEY"},
        {"DELETE", base + "/credentials/CFG_KEY"},
        {"POST", base + "/services"},
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
    const Case cases[] = {
        {{{"vault_ids", {leak}}}, "unknown_vault"},
        {{{"vault_ids", {"vlt_nosuch"}}}, "unknown_vault"},
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

// --- logs ---

TEST_F(AdminApiTest, Logs) {
    const std::string alpha = create_vault("alpha");
    auto entry = [](std::string session, std::string vault, std::string host) {
        AccessLogEntry e;
        e.ts = sys_clock::now();
        e.session = std::move(session);
        e.vault = std::move(vault);
        e.ingress = "mitm";
        e.method = "GET";
        e.host = std::move(host);
        e.port = 443;
        e.set_path("/p?key=secret");
        e.status = 200;
        return e;
    };
    log_.write(entry("s1", "alpha", "one.example.com"));
    log_.write(entry("s2", "cfgvault", "two.example.com"));
    log_.write(entry("s1", "alpha", "three.example.com"));
    log_.write(entry("s2", "", "four.example.com"));

    auto hosts = [&](std::map<std::string, std::string> query) {
        const auto r = call("GET", "/v1/logs", "", std::move(query));
        EXPECT_EQ(r.status, 200) << r.body;
        std::vector<std::string> out;
        const json body = parse(r);
        for (const auto& e : body["entries"]) out.push_back(e["host"]);
        return out;
    };
    using hs = std::vector<std::string>;
    EXPECT_EQ(hosts({}), (hs{"one.example.com", "two.example.com", "three.example.com", "four.example.com"}));
    EXPECT_EQ(hosts({{"limit", "2"}}), (hs{"three.example.com", "four.example.com"}));
    EXPECT_EQ(hosts({{"vault", "alpha"}}), (hs{"one.example.com", "three.example.com"}));
    EXPECT_EQ(hosts({{"vault", alpha}}), (hs{"one.example.com", "three.example.com"}));
    EXPECT_EQ(hosts({{"vault", "cfgvault"}}), (hs{"two.example.com"}));
    EXPECT_EQ(hosts({{"session", "s2"}}), (hs{"two.example.com", "four.example.com"}));
    EXPECT_EQ(hosts({{"session", "s1"}, {"vault", "alpha"}, {"limit", "1"}}), (hs{"three.example.com"}));
    EXPECT_EQ(hosts({{"session", "nobody"}}), hs{});

    const json first = parse(call("GET", "/v1/logs", "", {{"limit", "4"}}))["entries"][0];
    EXPECT_EQ(first["path"], "/p");
    EXPECT_EQ(first["session"], "s1");
    EXPECT_EQ(first["status"], 200);
    EXPECT_TRUE(first["ts"].is_string());

    for (const char* bad : {"0", "-1", "abc", "10001", "1.5", "2x"}) {
        const auto r = call("GET", "/v1/logs", "", {{"limit", bad}});
        EXPECT_EQ(r.status, 400) << bad;
        EXPECT_EQ(error_code(r), "invalid_query") << bad;
    }
    EXPECT_EQ(call("GET", "/v1/logs", "", {{"limit", "10000"}}).status, 200);
    EXPECT_EQ(call("POST", "/v1/logs").status, 405);
}

// --- concurrency ---

TEST_F(AdminApiTest, ConcurrentChanges) {
    constexpr int threads = 4, per_thread = 5;
    std::vector<std::thread> workers;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const std::string name = "c" + std::to_string(t) + "-" + std::to_string(i);
                const auto r = call("POST", "/v1/vaults", json{{"name", name}}.dump());
                if (r.status != 201) {
                    ++failures;
                    continue;
                }
                const std::string id = parse(r)["id"];
                const auto c = call("POST", "/v1/vaults/" + id + "/credentials",
                                    json{{"name", "K"}, {"value", api_secret}}.dump());
                const auto p = call("PUT", "/v1/vaults/" + id + "/credentials/K", json{{"value", rotated_secret}}.dump());
                if (c.status != 201 || p.status != 200) ++failures;
                call("GET", "/v1/vaults");
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    const auto state = snapshot();
    EXPECT_EQ(state->vaults.size(), 1u + threads * per_thread);
    for (const auto& [name, vault] : state->vaults) {
        if (vault.from_config) continue;
        EXPECT_EQ(vault.credentials.at("K").reveal(), rotated_secret) << name;
    }
    EXPECT_EQ(open_file_store(store_path(), master_key())->load().vaults.size(),
              static_cast<std::size_t>(threads * per_thread));
}

}  // namespace
}  // namespace vaultgate

namespace vaultgate {
namespace {

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
    EXPECT_NE(warnings[0].find("credential SHORT occurs in its redaction placeholder"), std::string::npos) << warnings[0];

    warnings.clear();
    const auto second = compose_state(config_state, config, data, now, first.get(), &warnings);
    EXPECT_EQ(second->vaults.at("api").services.at(0).redaction, nullptr);
    EXPECT_TRUE(warnings.empty());
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
    r = call("POST", "/v1/vaults/" + b + "/services",
             json{{"host", "cfg.example.com"}, {"path_prefix", "/v1/"}, {"auth_config", {{"type", "bearer"}, {"key", "KEY"}}}}
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
}  // namespace vaultgate
