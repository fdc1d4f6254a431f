// A replica with a local snapshot (store.snapshot_path) that starts while its
// database is down serves what the snapshot holds, reports degraded and
// refuses writes; once the database is back it reads it whole, so a
// revocation and a rotation made meanwhile through another replica are in
// force. Without a snapshot the start fails with a clear error.
#include "replica_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <iterator>

namespace vaultgate::test {
namespace {

class SnapshotStartTest : public ReplicasTest {
protected:
    void SetUp() override {
        ReplicasTest::SetUp();
        plain_config_ = dir_.write("vaultgate-plain.yaml", read(config_path_));
        // A short interval: every change is handed to the snapshot's writer,
        // and a graceful stop finishes the write.
        write_config("  snapshot_path: " + snapshot_ + "\n  snapshot_interval: 1ms\n");
        snapshot_config_ = config_path_;
    }

    static std::string read(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }

    std::unique_ptr<ServeProcess> serve(const std::string& config) {
        auto r = std::make_unique<ServeProcess>(config);
        r->forbid_in_stderr(secret_a);
        r->forbid_in_stderr(secret_b);
        return r;
    }

    static void stop(ServeProcess& r) {
        r.signal(SIGTERM);
        EXPECT_EQ(r.wait_exit(), 0) << r.stderr_text();
    }

    std::string snapshot_ = dir_.file("replica-snapshot.db");
    std::string plain_config_, snapshot_config_;
};

TEST_F(SnapshotStartTest, AReplicaStartsFromItsSnapshotWhileTheDatabaseIsDownAndCatchesUpAfter) {
    // A replica with a snapshot serves two sessions, and stops.
    auto a = serve(snapshot_config_);
    ASSERT_TRUE(a->started()) << a->stderr_text();
    const auto made = make_vault_and_session(*a);
    const std::string vault = made.first;
    const json kept = made.second;
    auto revoked = api(*a, "POST", "/v1/sessions", {{"vault_ids", {vault}}, {"ttl_seconds", 600}});
    ASSERT_EQ(revoked.status, 201) << revoked.body;
    const json gone = json::parse(revoked.body);
    ASSERT_EQ(secret_seen_through(*a, kept), secret_a);
    stop(*a);
    const std::string file = read(snapshot_);
    ASSERT_FALSE(file.empty());
    EXPECT_EQ(file.find(secret_a), std::string::npos) << "the snapshot holds the secret in the clear";

    // Meanwhile, through a replica without one: a rotation and a revocation.
    {
        auto b = serve(plain_config_);
        ASSERT_TRUE(b->started()) << b->stderr_text();
        ASSERT_EQ(api(*b, "PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}}).status, 200);
        ASSERT_EQ(api(*b, "DELETE", "/v1/sessions/" + gone["id"].get<std::string>()).status, 204);
        stop(*b);
    }

    pg_->stop();
    // Without a snapshot: a clear error.
    {
        auto c = serve(plain_config_);
        EXPECT_FALSE(c->started());
        EXPECT_EQ(c->wait_exit(), 1);
        EXPECT_NE(c->stderr_text().find("cannot start without its database unless it keeps a local snapshot"),
                  std::string::npos)
            << c->stderr_text();
    }
    // With one: the state it last saw, degraded, writes refused.
    auto again = serve(snapshot_config_);
    ASSERT_TRUE(again->started()) << again->stderr_text();
    EXPECT_NE(again->stderr_text().find("serving the local snapshot " + snapshot_), std::string::npos)
        << again->stderr_text();
    const auto ready = api(*again, "GET", "/readyz");
    EXPECT_EQ(ready.status, 200);
    EXPECT_NE(ready.body.find("degraded"), std::string::npos) << ready.body;
    EXPECT_EQ(api(*again, "GET", "/healthz").status, 200);
    EXPECT_EQ(secret_seen_through(*again, kept), secret_a);
    std::string status;
    EXPECT_NE(open_bound(*again, gone, &status), nullptr) << status;
    auto refused = api(*again, "POST", "/v1/sessions", {{"vault_ids", {vault}}, {"ttl_seconds", 600}});
    EXPECT_EQ(refused.status, 503) << refused.body;
    EXPECT_NE(refused.body.find("store_unavailable"), std::string::npos) << refused.body;

    // The database back: read whole, the rotation and the revocation hold.
    pg_->start();
    EXPECT_TRUE(eventually([&] { return secret_seen_through(*again, kept) == secret_b; }, 30000));
    EXPECT_TRUE(refuses_eventually(*again, gone, status, 30000)) << status;
    EXPECT_NE(api(*again, "GET", "/readyz").body.find("\"ready\""), std::string::npos);
    EXPECT_EQ(api(*again, "POST", "/v1/sessions", {{"vault_ids", {vault}}, {"ttl_seconds", 600}}).status, 201);
    stop(*again);
}

}  // namespace
}  // namespace vaultgate::test
