// The snapshot published after each change is built from the last one (only
// the touched vault or session is built again, the rest shared): after any
// sequence of changes it must be the snapshot composed whole from the store,
// and a change must leave the session shards it did not touch shared.
#include "admin_api_fixture.hpp"
#include "vaultgate/admin/catalog.hpp"

namespace vaultgate::admin_test {
namespace {

class AdminApiSnapshotTest : public AdminApiTest {
protected:
    // Field by field: vaults (ids, credentials, services) and sessions
    // (vaults, policy, token digest, expiry, source).
    void expect_same(const GatewayState& a, const GatewayState& b) {
        ASSERT_EQ(a.vaults.size(), b.vaults.size());
        for (const auto& [name, v] : a.vaults) {
            SCOPED_TRACE("vault " + name);
            ASSERT_TRUE(b.vaults.count(name));
            const Vault& w = b.vaults.at(name);
            EXPECT_EQ(v.id, w.id);
            EXPECT_EQ(v.from_config, w.from_config);
            ASSERT_EQ(v.credentials.size(), w.credentials.size());
            for (const auto& [cn, value] : v.credentials) EXPECT_EQ(value.reveal(), w.credentials.at(cn).reveal());
            ASSERT_EQ(v.services.size(), w.services.size());
            for (std::size_t i = 0; i < v.services.size(); ++i) {
                EXPECT_EQ(v.services[i].id, w.services[i].id);
                EXPECT_EQ(v.services[i].config.host, w.services[i].config.host);
                EXPECT_EQ(v.services[i].inputs_digest, w.services[i].inputs_digest);
            }
        }
        ASSERT_EQ(a.sessions.size(), b.sessions.size());
        for (const auto& [id, s] : a.sessions) {
            SCOPED_TRACE("session " + id);
            const Session* t = b.find_session(id);
            ASSERT_NE(t, nullptr);
            EXPECT_EQ(s.vault_names, t->vault_names);
            EXPECT_EQ(s.policy.name, t->policy.name);
            EXPECT_EQ(s.policy.allow_http, t->policy.allow_http);
            EXPECT_EQ(s.token_digest, t->token_digest);
            EXPECT_EQ(s.expires_at, t->expires_at);
            EXPECT_EQ(s.source.has_value(), t->source.has_value());
        }
        EXPECT_EQ(a.default_session, b.default_session);
    }

    void expect_snapshot_is_the_composed_one() {
        const Config config = parse_config(base_config, "test.yaml");
        const auto composed = compose_state(*admin::Catalog::build_config_state(config), config,
                                            open_file_store(store_path(), master_key())->load(), sys_clock::now());
        expect_same(*snapshot(), *composed);
    }
};

TEST_F(AdminApiSnapshotTest, EveryChangeLeavesTheSnapshotComposedFromTheStore) {
    const auto a = create_vault("alpha");
    add_credential(a, "KEY", api_secret);
    expect_snapshot_is_the_composed_one();
    const auto svc = add_service(a, "api.alpha.test", "KEY");
    const auto b = create_vault("beta");
    add_credential(b, "KEY", api_secret);
    add_service(b, "api.beta.test", "KEY");
    std::vector<std::string> sessions;
    for (int i = 0; i < 20; ++i)
        sessions.push_back(create_session({{"vault_ids", {i % 2 ? a : b, "cfgvault"}},
                                           {"egress_policy", i % 3 ? "open" : "default"}})["id"]);
    expect_snapshot_is_the_composed_one();
    EXPECT_EQ(call("PUT", "/v1/vaults/" + a + "/credentials/KEY", json{{"value", rotated_secret}}.dump()).status, 200);
    EXPECT_EQ(call("DELETE", "/v1/sessions/" + sessions[3]).status, 204);
    EXPECT_EQ(call("DELETE", "/v1/vaults/" + a + "/services/" + svc).status, 204);
    expect_snapshot_is_the_composed_one();
    for (int i = 0; i < 20; i += 2) EXPECT_EQ(call("DELETE", "/v1/sessions/" + sessions[i]).status, 204);
    const auto c = create_vault("gamma");
    EXPECT_EQ(call("DELETE", "/v1/vaults/" + c).status, 204);
    expect_snapshot_is_the_composed_one();
}

TEST_F(AdminApiSnapshotTest, AChangeSharesTheSessionShardsItDidNotTouch) {
    for (int i = 0; i < 300; ++i) create_session({{"ttl_seconds", 600}});
    const auto before = snapshot();
    const auto made = create_session({{"ttl_seconds", 600}})["id"].get<std::string>();
    const auto after = snapshot();
    std::size_t copied = 0;
    for (std::size_t i = 0; i < ShardedTable<Session>::shard_count; ++i)
        copied += after->sessions.same_shard(before->sessions, i) ? 0 : 1;
    EXPECT_EQ(copied, 1u);
    EXPECT_EQ(after->sessions.size(), before->sessions.size() + 1);
    EXPECT_NE(after->find_session(made), nullptr);
    EXPECT_EQ(before->find_session(made), nullptr);  // a published snapshot never changes
}

// A refused change (a tie) and a failed save leave the data and the snapshot
// as they were, also after the in-place edit that preceded them.
TEST_F(AdminApiSnapshotTest, ARefusedOrFailedChangeIsTakenBack) {
    const auto a = create_vault("alpha");
    add_credential(a, "KEY", api_secret);
    add_service(a, "api.tie.test", "KEY");
    const auto b = create_vault("beta");
    add_credential(b, "KEY", api_secret);
    add_service(b, "api.tie.test", "KEY");
    const auto before = snapshot();
    const auto tie = call("POST", "/v1/sessions", json{{"vault_ids", {a, b}}}.dump());
    EXPECT_EQ(tie.status, 409) << tie.body;
    EXPECT_EQ(error_code(tie), "binding_conflict");
    EXPECT_EQ(snapshot(), before);
    *fail_saves_ = true;
    EXPECT_EQ(call("POST", "/v1/sessions", json{{"vault_ids", {a}}}.dump()).status, 500);
    EXPECT_EQ(call("PUT", "/v1/vaults/" + a + "/credentials/KEY", json{{"value", rotated_secret}}.dump()).status, 500);
    EXPECT_EQ(call("DELETE", "/v1/vaults/" + b).status, 500);
    *fail_saves_ = false;
    EXPECT_EQ(snapshot(), before);
    expect_snapshot_is_the_composed_one();
    // The next change starts from the data as it was.
    create_session({{"vault_ids", {a}}});
    expect_snapshot_is_the_composed_one();
}

}  // namespace
}  // namespace vaultgate::admin_test
