// The PostgreSQL store against a real PostgreSQL 15: schema migration, one
// row per change, values sealed and tokens as digests, compare-and-set on
// credential versions, reading other writers' changes, and the database
// going away and coming back.
#include "vaultgate/pgstore/pg_store.hpp"
#include "pg_server.hpp"
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/egress/address.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace vaultgate::test {
namespace {

constexpr const char* secret_value = "sk-live-pg-store-0123456789";
constexpr const char* rotated_value = "sk-live-pg-store-rotated-9876";

Secret master_key() { return Secret(std::string(32, '\x5a')); }

EgressPolicy open_policy() {
    EgressPolicy p;
    p.name = "default";
    return p;
}

// A vault with one credential and one service, and a session using it.
StoreData sample() {
    StoreData d;
    StoredVault v;
    v.id = "vlt_one";
    v.name = "team";
    v.created_at_ms = 1000;
    StoredCredential c;
    c.name = "KEY";
    c.value = Secret(secret_value);
    c.updated_at_ms = 1001;
    v.credentials.push_back(c);
    StoredService s;
    s.id = "svc_one";
    s.config.host = "api.example.com";
    s.config.port = 443;
    s.config.auth.type = AuthType::api_key;
    s.config.auth.key = "KEY";
    s.config.auth.header = "x-api-key";
    v.services.push_back(s);
    d.vaults.push_back(v);
    StoredSession session;
    session.id = "ses_one";
    session.token_digest = "digest-of-the-token";
    session.vault_ids = {"vlt_one"};
    session.policy = open_policy();
    session.expires_at_ms = 4102444800000;
    session.source = parse_cidr("10.1.0.0/16");
    session.created_at_ms = 1002;
    d.sessions.push_back(session);
    return d;
}

// `base` with the changes of sample() made one by one through `store`.
std::uint64_t add_sample(VaultStore& store, StoreData& data) {
    const StoreData all = sample();
    StoreData next = data;
    next.vaults.push_back(all.vaults[0]);
    next.vaults[0].credentials.clear();
    next.vaults[0].services.clear();
    std::uint64_t version = store.apply({StoreChange::Kind::add_vault, "vlt_one"}, next);
    next.vaults[0].credentials = all.vaults[0].credentials;
    version = store.apply({StoreChange::Kind::add_credential, "vlt_one", "KEY"}, next);
    next.vaults[0].services = all.vaults[0].services;
    version = store.apply({StoreChange::Kind::add_service, "vlt_one", "svc_one"}, next);
    next.sessions = all.sessions;
    version = store.apply({StoreChange::Kind::add_session, {}, "ses_one"}, next);
    next.generation = version;
    data = std::move(next);
    return version;
}

// What libpq reads from the URL is checked, not its text: no password in any
// spelling, and no URL libpq cannot read, and the refusal quotes none of it.
TEST(PgStore, AUrlWithAPasswordOrThatLibpqCannotReadIsRefusedUnquoted) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"postgresql://vaultgate:hunter2-secret?x@127.0.0.1:1/db", "holds a password"},
        {"postgresql://127.0.0.1:1/db?pass%77ord=hunter2-secret", "holds a password"},
        {"postgresql://127.0.0.1:1/db?application_name=%zzhunter2-secret", "not a URL libpq can read"},
        {"postgresql://127.0.0.1:1/db?connect_timeout=0", "connect_timeout must be at least 1 second"},
    };
    for (const auto& [url, why] : cases) {
        try {
            open_pg_store(url, master_key());
            ADD_FAILURE() << "opened " << url;
        } catch (const StoreError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(why), std::string::npos) << url << ": " << what;
            EXPECT_EQ(what.find("hunter2"), std::string::npos) << url << ": " << what;
        }
    }
}

TEST(PgStore, MigratesOnceAndKeepsEveryChangeAsRows) {
    VAULTGATE_START_PG(pg);
    // Replicas that start at one moment all come up (the schema lock).
    std::vector<std::thread> starters;
    std::atomic<int> opened{0};
    for (int i = 0; i < 3; ++i)
        starters.emplace_back([&] {
            if (open_pg_store(pg->url(), master_key())) ++opened;
        });
    for (auto& t : starters) t.join();
    EXPECT_EQ(opened.load(), 3);
    EXPECT_EQ(pg->psql("SELECT schema_version FROM vaultgate_meta"), "2\n");

    auto store = open_pg_store(pg->url(), master_key());
    StoreData data = store->load();
    EXPECT_EQ(data.generation, 0u);
    EXPECT_EQ(add_sample(*store, data), 4u);  // one version per change

    auto other = open_pg_store(pg->url(), master_key());
    const StoreData read = other->load();
    EXPECT_EQ(read.generation, 4u);
    ASSERT_EQ(read.vaults.size(), 1u);
    EXPECT_EQ(read.vaults[0].name, "team");
    ASSERT_EQ(read.vaults[0].credentials.size(), 1u);
    EXPECT_EQ(read.vaults[0].credentials[0].value.reveal(), secret_value);
    ASSERT_EQ(read.vaults[0].services.size(), 1u);
    EXPECT_EQ(read.vaults[0].services[0].config.host, "api.example.com");
    ASSERT_EQ(read.sessions.size(), 1u);
    EXPECT_EQ(read.sessions[0].token_digest, "digest-of-the-token");
    ASSERT_TRUE(read.sessions[0].source);
    EXPECT_EQ(cidr_text(*read.sessions[0].source), "10.1.0.0/16");

    // The database never holds the value in the clear.
    const auto dump = pg->psql("SELECT sealed_value FROM vaultgate_credentials");
    EXPECT_EQ(dump.find(secret_value), std::string::npos) << dump;
    EXPECT_EQ(dump.rfind("v1.", 0), 0u) << dump;
}

TEST(PgStore, ASealedValueOpensOnlyWithItsMasterKey) {
    VAULTGATE_START_PG(pg);
    auto store = open_pg_store(pg->url(), master_key());
    StoreData data = store->load();
    add_sample(*store, data);
    auto wrong = open_pg_store(pg->url(), Secret(std::string(32, '\x11')));
    try {
        wrong->load();
        FAIL() << "a wrong master key opened the values";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("wrong master key"), std::string::npos) << e.what();
    }
}

TEST(PgStore, RotationIsCompareAndSetAndOtherWritersChangesAreRead) {
    VAULTGATE_START_PG(pg);
    auto a = open_pg_store(pg->url(), master_key());
    auto b = open_pg_store(pg->url(), master_key());
    StoreData da = a->load();
    add_sample(*a, da);
    StoreData db = b->load();

    // Both replicas hold version 1; the first rotation wins.
    auto rotate = [](VaultStore& store, const StoreData& data, const char* value) {
        StoreData next = data;
        auto& c = next.vaults[0].credentials[0];
        StoreChange change{StoreChange::Kind::rotate_credential, "vlt_one", "KEY"};
        change.expected_version = c.version;
        c.value = Secret(value);
        c.version += 1;
        next.generation = data.generation + 1;
        return store.apply(change, next);
    };
    EXPECT_EQ(rotate(*a, da, rotated_value), 5u);
    try {
        rotate(*b, db, "lost-rotation");
        FAIL() << "the second rotation of version 1 was accepted";
    } catch (const StoreConflict& e) {
        EXPECT_EQ(e.code, "version_conflict");
    }
    // b catches up: the rotation, then a deletion of the session.
    ASSERT_TRUE(b->refresh(db));
    EXPECT_EQ(db.generation, 5u);
    EXPECT_EQ(db.vaults[0].credentials[0].version, 2u);
    EXPECT_EQ(db.vaults[0].credentials[0].value.reveal(), rotated_value);
    EXPECT_FALSE(b->refresh(db));

    StoreData next = db;
    next.sessions.clear();
    StoreChange revoke{StoreChange::Kind::remove_sessions};
    revoke.keys = {"ses_one"};
    next.generation = db.generation + 1;
    EXPECT_EQ(b->apply(revoke, next), 6u);
    ASSERT_TRUE(a->refresh(da));
    EXPECT_TRUE(da.sessions.empty());
    EXPECT_EQ(da.vaults[0].credentials[0].version, 2u);

    // A removal that another writer already made changes nothing.
    EXPECT_EQ(a->apply(revoke, next), 6u);
    // A name taken through another replica is a conflict, not an overwrite.
    StoreData clash = da;
    StoredVault v;
    v.id = "vlt_two";
    v.name = "team";
    clash.vaults.push_back(v);
    try {
        a->apply({StoreChange::Kind::add_vault, "vlt_two"}, clash);
        FAIL() << "two vaults of one name";
    } catch (const StoreConflict& e) {
        EXPECT_EQ(e.code, "name_taken");
    }
}

// Removals older than store.removals_retention are deleted; a replica whose
// version is older than the newest one deleted reads the store whole again,
// so a deletion it never saw does not stay in its memory.
TEST(PgStore, OldRemovalsArePrunedAndAReplicaBehindThemReadsEverythingAgain) {
    VAULTGATE_START_PG(pg);
    auto a = open_pg_store(pg->url(), master_key());
    StoreData da = a->load();
    add_sample(*a, da);
    StoreData behind = da;  // a replica that saw version 4 and nothing since
    const auto remove_session = [&](const std::string& id) {
        StoreData next = da;
        std::erase_if(next.sessions, [&](const StoredSession& s) { return s.id == id; });
        StoreChange change{StoreChange::Kind::remove_sessions};
        change.keys = {id};
        next.generation = da.generation + 1;
        ASSERT_EQ(a->apply(change, next), next.generation);
        da = std::move(next);
    };
    remove_session("ses_one");  // version 5
    StoreData next = da;
    next.sessions.push_back(sample().sessions[0]);
    next.sessions.back().id = "ses_two";
    next.sessions.back().token_digest = "digest-two";
    next.generation = da.generation + 1;
    ASSERT_EQ(a->apply({StoreChange::Kind::add_session, {}, "ses_two"}, next), 6u);
    da = next;
    StoreData at_six = da;
    remove_session("ses_two");  // version 7

    // The first removal is two days old, the second new; the retention is a day.
    pg->psql("UPDATE vaultgate_removals SET removed_at = now() - interval '2 days' WHERE version = 5");
    auto pruner = open_pg_store(pg->url(), master_key(), PgStoreOptions{std::chrono::hours(24)});
    StoreData dp = pruner->load();
    EXPECT_FALSE(pruner->refresh(dp));  // prunes; nothing else changed
    EXPECT_EQ(pg->psql("SELECT version FROM vaultgate_removals ORDER BY version"), "7\n");
    EXPECT_EQ(pg->psql("SELECT removals_pruned_through FROM vaultgate_meta"), "5\n");

    // Behind the pruned removal: read whole, and ses_one is gone.
    ASSERT_TRUE(a->refresh(behind));
    EXPECT_EQ(behind.generation, 7u);
    EXPECT_TRUE(behind.sessions.empty());
    ASSERT_EQ(behind.vaults.size(), 1u);
    EXPECT_EQ(behind.vaults[0].credentials[0].value.reveal(), secret_value);
    // Past it: the removals since its version are all there.
    ASSERT_TRUE(a->refresh(at_six));
    EXPECT_EQ(at_six.generation, 7u);
    EXPECT_TRUE(at_six.sessions.empty());
}

TEST(PgStore, ADatabaseThatGoesAwayIsUnavailableUntilItIsBack) {
    VAULTGATE_START_PG(pg);
    auto store = open_pg_store(pg->url(), master_key());
    StoreData data = store->load();
    add_sample(*store, data);
    EXPECT_TRUE(store->available());

    pg->stop();
    StoreData next = data;
    next.sessions.clear();
    StoreChange revoke{StoreChange::Kind::remove_sessions};
    revoke.keys = {"ses_one"};
    EXPECT_THROW(store->apply(revoke, next), StoreUnavailable);
    EXPECT_FALSE(store->available());
    EXPECT_THROW(store->refresh(data), StoreUnavailable);
    // With no database at all, opening names the cause.
    try {
        open_pg_store(pg->url(), master_key());
        FAIL() << "opened a store without its database";
    } catch (const StoreUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
    }

    pg->start();
    // The reconnection waits out its backoff (at most 5 s); no fixed sleep.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    std::uint64_t version = 0;
    while (!version) {
        try {
            version = store->apply(revoke, next);
        } catch (const StoreUnavailable&) {
            ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the store did not reconnect";
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    EXPECT_EQ(version, 5u);
    EXPECT_TRUE(store->available());
}

TEST(PgStore, MigrateCopiesAWholeStoreIntoAnEmptyDatabaseOnly) {
    VAULTGATE_START_PG(pg);
    auto store = open_pg_store(pg->url(), master_key());
    store->save(sample());
    const StoreData read = open_pg_store(pg->url(), master_key())->load();
    ASSERT_EQ(read.vaults.size(), 1u);
    EXPECT_EQ(read.vaults[0].credentials[0].value.reveal(), secret_value);
    EXPECT_EQ(read.sessions.size(), 1u);
    EXPECT_THROW(store->save(sample()), StoreError);
}

}  // namespace
}  // namespace vaultgate::test
