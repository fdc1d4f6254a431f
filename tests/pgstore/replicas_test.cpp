// Replicas of the real binary on one PostgreSQL: a change through one
// replica's admin API is in force on the others (the bound origin sees the
// new secret, a revoked session is refused and its connections closed), within
// 1 s at p99, also while they serve requests; concurrent rotations lose
// nothing; an outage leaves three replicas serving their last snapshot and
// refusing writes, and they catch up after.
#include "replica_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>
#include <vector>

namespace vaultgate::test {
namespace {

using steady = std::chrono::steady_clock;

TEST_F(ReplicasTest, AChangeThroughOneReplicaIsInForceOnTheOthers) {
    auto& a = start_replica();
    auto& b = start_replica();
    auto& c = start_replica();
    const auto made = make_vault_and_session(a);
    const std::string vault = made.first;
    const json session = made.second;
    // The session made on A works on B and C: the origin gets the vault's secret.
    EXPECT_TRUE(eventually([&] { return secret_seen_through(b, session) == secret_a; }, 5000));
    EXPECT_TRUE(eventually([&] { return secret_seen_through(c, session) == secret_a; }, 5000));

    auto rotated = api(a, "PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}});
    ASSERT_EQ(rotated.status, 200) << rotated.body;
    EXPECT_EQ(json::parse(rotated.body)["version"], 2);
    EXPECT_TRUE(eventually([&] { return secret_seen_through(b, session) == secret_b; }, 5000));
    EXPECT_TRUE(eventually([&] { return secret_seen_through(c, session) == secret_b; }, 5000));

    // Revoked on A: B's open connection is closed, and a new one refused.
    auto held = open_bound(b, session);
    ASSERT_TRUE(held);
    EXPECT_EQ(api(a, "DELETE", "/v1/sessions/" + session["id"].get<std::string>()).status, 204);
    EXPECT_TRUE(held->closed_by_peer(5000));
    std::string status;
    EXPECT_TRUE(refuses_eventually(c, session, status, 5000)) << status;
}

TEST_F(ReplicasTest, ConcurrentRotationsThroughTwoReplicasLoseNothing) {
    const auto two = two_replicas_with_a_session();
    auto &a = two.a, &b = two.b;
    const std::string& vault = two.vault;
    const json& session = two.session;
    ASSERT_TRUE(eventually([&] { return api(b, "GET", "/v1/vaults/" + vault).status == 200; }, 5000));
    std::atomic<int> accepted{0}, conflicts{0}, other{0};
    auto rotate_many = [&](ServeProcess& r) {
        for (int i = 0; i < 25; ++i) {
            const auto status = api(r, "PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}}).status;
            (status == 200 ? accepted : status == 409 ? conflicts : other)++;
        }
    };
    std::thread ta([&] { rotate_many(a); });
    std::thread tb([&] { rotate_many(b); });
    ta.join();
    tb.join();
    EXPECT_EQ(other.load(), 0);
    EXPECT_EQ(accepted + conflicts, 50);
    // Each accepted rotation raised the version by exactly one.
    const auto version = [&](ServeProcess& r) {
        return json::parse(api(r, "GET", "/v1/vaults/" + vault).body)["credentials"][0]["version"].get<int>();
    };
    EXPECT_TRUE(eventually([&] { return version(a) == 1 + accepted && version(b) == 1 + accepted; }, 5000))
        << version(a) << " " << version(b) << " accepted " << accepted.load();
}

TEST_F(ReplicasTest, NinetyNinthPercentileOfPropagationOverAHundredChangesIsUnderASecond) {
    const auto two = two_replicas_with_a_session();
    auto &a = two.a, &b = two.b;
    const std::string& vault = two.vault;
    const json& session = two.session;
    ASSERT_TRUE(eventually([&] { return api(b, "GET", "/v1/vaults/" + vault).status == 200; }, 5000));
    std::vector<double> delays;
    for (int i = 0; i < 100; ++i) {
        const auto start = steady::now();
        ASSERT_EQ(api(a, "PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}}).status, 200);
        const int expected = 2 + i;
        // Polled until in force on B, or given up after 5 s (counted as 5 s).
        eventually(
            [&] {
                auto r = api(b, "GET", "/v1/vaults/" + vault);
                return r.status == 200 && json::parse(r.body)["credentials"][0]["version"] == expected;
            },
            5000);
        delays.push_back(std::chrono::duration<double>(steady::now() - start).count());
    }
    std::sort(delays.begin(), delays.end());
    const double p99 = delays[98];
    std::printf("propagation over 100 changes: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", delays[49] * 1000, p99 * 1000,
                delays.back() * 1000);
    EXPECT_LT(p99, 1.0);
}

TEST_F(ReplicasTest, PropagationStaysUnderASecondWhileTheReplicasServeRequests) {
    const auto two = two_replicas_with_a_session();
    auto &a = two.a, &b = two.b;
    const std::string& vault = two.vault;
    const json& session = two.session;
    ASSERT_TRUE(eventually([&] { return !secret_seen_through(b, session).empty(); }, 5000));
    // Two keep-alive clients per replica send requests back to back until the
    // changes are done (each at most 200000 requests).
    std::atomic<bool> done{false};
    std::atomic<long> served{0}, failed{0};
    std::vector<std::thread> load;
    for (ServeProcess* r : {&a, &a, &b, &b}) {
        load.emplace_back([&, r] {
            auto c = open_bound(*r, session);
            if (!c) {
                ++failed;
                return;
            }
            const std::string request = "GET /echo HTTP/1.1\r\nHost: api.bound.test:" +
                                        std::to_string(bound_.port()) + "\r\nx-api-key: placeholder\r\n\r\n";
            for (int i = 0; i < 200000 && !done.load(); ++i) {
                c->write(request);
                const auto response = c->read_response();
                if (!response || response->head.rfind("HTTP/1.1 200", 0) != 0) {
                    ++failed;
                    return;
                }
                ++served;
            }
        });
    }
    std::vector<double> delays;
    for (int i = 0; i < 100; ++i) {
        const auto start = steady::now();
        const bool even = i % 2 == 0;
        ASSERT_EQ(api(even ? a : b, "PUT", "/v1/vaults/" + vault + "/credentials/KEY",
                      {{"value", even ? secret_b : secret_a}})
                      .status,
                  200);
        const int expected = 2 + i;
        ServeProcess& other = even ? b : a;
        eventually(
            [&] {
                auto r = api(other, "GET", "/v1/vaults/" + vault);
                return r.status == 200 && json::parse(r.body)["credentials"][0]["version"] == expected;
            },
            5000);
        delays.push_back(std::chrono::duration<double>(steady::now() - start).count());
    }
    const long served_during_changes = served.load();
    done = true;
    for (auto& t : load) t.join();
    std::sort(delays.begin(), delays.end());
    std::printf("under load (%ld requests served): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", served_during_changes,
                delays[49] * 1000, delays[98] * 1000, delays.back() * 1000);
    EXPECT_EQ(failed.load(), 0);
    EXPECT_GT(served_during_changes, 400) << "the replicas were not under load";
    EXPECT_LT(delays[98], 1.0);
    // The last change (through B) is what A's clients now get.
    EXPECT_EQ(secret_seen_through(a, session), secret_a);
}

TEST_F(ReplicasTest, AnOutageLeavesTheSnapshotInForceAndTheReplicasCatchUp) {
    const auto two = two_replicas_with_a_session();
    auto &a = two.a, &b = two.b;
    auto& c = start_replica();
    const std::vector<ServeProcess*> all{&a, &b, &c};
    const std::string& vault = two.vault;
    const json& session = two.session;
    for (auto* r : all) ASSERT_TRUE(eventually([&] { return secret_seen_through(*r, session) == secret_a; }, 5000));
    // No token needed, as for /healthz.
    const auto ready = admin_request(a.admin_port(), "GET", "/readyz", "");
    EXPECT_EQ(ready.status, 200);
    EXPECT_NE(ready.body.find("\"ready\""), std::string::npos) << ready.body;

    pg_->stop();
    // Writes are refused, reads and the proxy keep the last snapshot.
    auto refused = api(a, "PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}});
    EXPECT_EQ(refused.status, 503) << refused.body;
    EXPECT_NE(refused.body.find("store_unavailable"), std::string::npos) << refused.body;
    for (auto* r : all) {
        EXPECT_TRUE(
            eventually([&] { return api(*r, "GET", "/readyz").body.find("degraded") != std::string::npos; }, 30000));
        EXPECT_EQ(api(*r, "GET", "/healthz").status, 200);
        EXPECT_EQ(secret_seen_through(*r, session), secret_a);
    }
    EXPECT_EQ(api(b, "GET", "/v1/vaults/" + vault).status, 200);

    pg_->start();
    // Back: A's write goes through once it has reconnected, and every
    // replica follows.
    EXPECT_TRUE(eventually(
        [&] {
            return api(a, "PUT", "/v1/vaults/" + vault + "/credentials/KEY", {{"value", secret_b}}).status == 200;
        },
        30000));
    for (auto* r : all) {
        EXPECT_TRUE(eventually([&] { return secret_seen_through(*r, session) == secret_b; }, 30000));
        EXPECT_TRUE(eventually(
            [&] { return api(*r, "GET", "/readyz").body.find("\"ready\"") != std::string::npos; }, 30000));
    }
    // A revocation after the recovery holds on every replica.
    EXPECT_EQ(api(c, "DELETE", "/v1/sessions/" + session["id"].get<std::string>()).status, 204);
    for (auto* r : all) {
        std::string status;
        EXPECT_TRUE(refuses_eventually(*r, session, status, 5000)) << status;
    }
}

TEST_F(ReplicasTest, AReplicaWithoutItsDatabaseAtStartExitsWithAClearError) {
    pg_->stop();
    ServeProcess r(config_path_);
    EXPECT_FALSE(r.started());
    EXPECT_EQ(r.wait_exit(), 1);
    EXPECT_NE(r.stderr_text().find("cannot start without its database"), std::string::npos) << r.stderr_text();
}

}  // namespace
}  // namespace vaultgate::test
