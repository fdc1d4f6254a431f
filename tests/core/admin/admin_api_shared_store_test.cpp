// The admin API on a store shared by replicas (a fake with the database
// store's contract): a stale rotation is a 409 after which the replica has
// caught up, a store out of reach is a 503 with /readyz degraded, and a
// session deleted through one replica closes its connections on the other.
#include "admin_api_fixture.hpp"

namespace vaultgate::admin_test {
namespace {

// One "database" for several replicas.
struct SharedData {
    std::mutex mutex;
    StoreData data;
    bool down = false;
};

class SharedFakeStore final : public VaultStore {
public:
    explicit SharedFakeStore(std::shared_ptr<SharedData> shared) : shared_(std::move(shared)) {}
    StoreData load() override {
        std::lock_guard lock(shared_->mutex);
        unreachable();
        return shared_->data;
    }
    void save(const StoreData&) override { throw StoreError("not used"); }
    std::uint64_t apply(const StoreChange& change, const StoreData& next) override {
        std::lock_guard lock(shared_->mutex);
        unreachable();
        if (change.kind == StoreChange::Kind::rotate_credential) {
            for (const auto& v : shared_->data.vaults)
                for (const auto& c : v.credentials)
                    if (v.id == change.vault_id && c.name == change.key && c.version != change.expected_version)
                        throw StoreConflict("version_conflict", "credential '" + c.name + "' was rotated elsewhere");
        }
        const auto version = shared_->data.generation + 1;
        shared_->data = next;
        shared_->data.generation = version;
        return version;
    }
    // Always whole: the listed changes are the database store's (tests/pgstore).
    bool refresh(StoreData& data, Refresh* read) override {
        std::lock_guard lock(shared_->mutex);
        unreachable();
        if (shared_->data.generation == data.generation) return false;
        data = shared_->data;
        if (read) read->whole = true;
        return true;
    }
    bool available() const override { return !shared_->down; }
    std::string describe() const override { return "shared fake"; }

private:
    void unreachable() const {
        if (shared_->down) throw StoreUnavailable("database: cannot connect");
    }
    std::shared_ptr<SharedData> shared_;
};

class SharedStoreTest : public AdminApiTest {
protected:
    std::unique_ptr<AdminApi> replica(std::vector<std::string>& closed) {
        AdminOptions options;
        options.proxy_url = "http://127.0.0.1:3128";
        options.max_ttl = std::chrono::seconds(86400);
        options.max_body = 64 * 1024;
        auto api = std::make_unique<AdminApi>(parse_config(base_config, "test.yaml"),
                                              std::make_unique<SharedFakeStore>(shared_), master_key(), options,
                                              nullptr, nullptr, nullptr, nullptr);
        api->on_session_closed = [&closed](const std::string& id) { closed.push_back(id); };
        api->load();
        return api;
    }

    std::shared_ptr<SharedData> shared_ = std::make_shared<SharedData>();
    std::vector<std::string> closed_a_, closed_b_;
};

TEST_F(SharedStoreTest, AStaleRotationIsAConflictAndTheRetryApplies) {
    auto a = replica(closed_a_);
    auto b = replica(closed_b_);
    const auto vault = parse(call_on(*a, "POST", "/v1/vaults", R"({"name":"team"})"))["id"].get<std::string>();
    ASSERT_EQ(
        call_on(*a, "POST", "/v1/vaults/" + vault + "/credentials", R"({"name":"K","value":")" + api_secret + R"("})")
            .status,
        201);
    b->refresh();
    ASSERT_EQ(
        call_on(*a, "PUT", "/v1/vaults/" + vault + "/credentials/K", R"({"value":")" + rotated_secret + R"("})").status,
        200);
    // B still holds version 1: its rotation would overwrite A's.
    const auto stale =
        call_on(*b, "PUT", "/v1/vaults/" + vault + "/credentials/K", R"({"value":")" + api_secret + R"("})");
    EXPECT_EQ(stale.status, 409);
    EXPECT_EQ(error_code(stale), "version_conflict");
    // B read the store while answering: the retry replaces version 2.
    const auto retry =
        call_on(*b, "PUT", "/v1/vaults/" + vault + "/credentials/K", R"({"value":")" + api_secret + R"("})");
    ASSERT_EQ(retry.status, 200) << retry.body;
    EXPECT_EQ(parse(retry)["version"], 3);
}

TEST_F(SharedStoreTest, ReadyzSaysStartingUntilTheStoreIsLoaded) {
    auto api = make_api(parse_config(base_config, "test.yaml"), false);
    const auto r = call_on(*api, "GET", "/readyz");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(parse(r)["status"], "starting");
    api->load();
    EXPECT_EQ(parse(call_on(*api, "GET", "/readyz"))["status"], "ready");
}

TEST_F(SharedStoreTest, AStoreOutOfReachRefusesWritesAndReportsDegraded) {
    auto a = replica(closed_a_);
    EXPECT_EQ(parse(call_on(*a, "GET", "/readyz"))["status"], "ready");
    shared_->down = true;
    const auto refused = call_on(*a, "POST", "/v1/vaults", R"({"name":"team"})");
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(error_code(refused), "store_unavailable");
    const auto ready = call_on(*a, "GET", "/readyz");
    EXPECT_EQ(ready.status, 200);
    EXPECT_EQ(parse(ready)["status"], "degraded");
    EXPECT_EQ(call_on(*a, "GET", "/healthz").status, 200);
    EXPECT_THROW(a->refresh(), StoreUnavailable);
    shared_->down = false;
    EXPECT_EQ(call_on(*a, "POST", "/v1/vaults", R"({"name":"team"})").status, 201);
}

TEST_F(SharedStoreTest, ASessionDeletedThroughOneReplicaIsClosedOnTheOther) {
    auto a = replica(closed_a_);
    auto b = replica(closed_b_);
    const auto vault = parse(call_on(*a, "POST", "/v1/vaults", R"({"name":"team"})"))["id"].get<std::string>();
    const auto made = call_on(*a, "POST", "/v1/sessions", R"({"vault_ids":[")" + vault + R"("]})");
    ASSERT_EQ(made.status, 201) << made.body;
    const auto id = parse(made)["id"].get<std::string>();
    b->refresh();
    EXPECT_EQ(call_on(*b, "GET", "/v1/sessions/" + id).status, 200);
    ASSERT_EQ(call_on(*a, "DELETE", "/v1/sessions/" + id).status, 204);
    EXPECT_EQ(b->refresh(), std::vector<std::string>{id});
    EXPECT_EQ(closed_b_, std::vector<std::string>{id});
    EXPECT_EQ(call_on(*b, "GET", "/v1/sessions/" + id).status, 404);
}

}  // namespace
}  // namespace vaultgate::admin_test
