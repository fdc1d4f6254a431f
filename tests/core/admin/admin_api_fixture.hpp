#pragma once
// The fixture of the admin API tests: the API against the real encrypted file
// store, a real AccessLog and real Metrics. Every response body the fixture
// sees is kept, and at the end of each test none of them may hold any
// credential value used in it.
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

namespace vaultgate::admin_test {

using nlohmann::json;
using sys_clock = std::chrono::system_clock;

// Every value used as a credential (or pasted where one does not belong)
// carries one of these markers; no response may contain any of them.
inline const char* const secret_markers[] = {"aaa111", "bbb222", "ccc333", "LEAKME"};
inline const std::string api_secret = "sk-live-SECRET-aaa111zz";
inline const std::string rotated_secret = "sk-live-SECRET-bbb222yy";
inline const std::string config_secret = "cfg-SECRET-ccc333xx";
inline const std::string leak = "sk-LEAKME-0123456789abcdef";

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

inline Secret master_key() { return Secret(std::string(32, 'k')); }

inline const char* const base_config = R"(
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
            &log_, &metrics_,
            [] {
                return MetricsExtras{42, 7, 3, 5, 9};
            });
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
        const auto r =
            call("POST", "/v1/vaults/" + vault_id + "/credentials", json{{"name", name}, {"value", value}}.dump());
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

}  // namespace vaultgate::admin_test
