// The file store's journal: a change appends one record and leaves the
// snapshot alone; a start replays the records; a torn last record (a crash
// mid-append) is left out, and a journal that grows past the snapshot is
// folded into a new one. A writer killed mid-append leaves a store that
// loads, holding a prefix of the changes it made.
#include "killed_writer.hpp"
#include "store_fixtures.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>

namespace vaultgate {
namespace {

using namespace store_test;
using test::TempDir;
using Kind = StoreChange::Kind;

StoredSession session_named(const std::string& id, std::size_t padding = 0) {
    StoredSession s;
    s.id = id;
    s.token_digest = token_digest("token-" + id);
    s.vault_ids = {"vlt_x"};
    s.policy = policy(R"({"allowed_domains":["pypi.org"]})", "");
    if (padding) s.vault_ids.push_back(std::string(padding, 'v'));  // bulk only: ids are not checked here
    s.expires_at_ms = 4102444800000;
    s.created_at_ms = 1764439800000;
    return s;
}

// Makes one change to `data` as the admin API does (next generation, item in
// the data) and applies it to `store`.
struct Changer {
    VaultStore& store;
    StoreData data;

    void commit(const StoreChange& change) {
        data.generation += 1;
        ASSERT_EQ(store.apply(change, data), data.generation);
    }
    void add_session(const std::string& id, std::size_t padding = 0) {
        data.sessions.push_back(session_named(id, padding));
        commit({Kind::add_session, {}, id});
    }
    void remove_sessions(std::vector<std::string> ids) {
        std::erase_if(data.sessions, [&](const StoredSession& s) {
            return std::find(ids.begin(), ids.end(), s.id) != ids.end();
        });
        StoreChange change{Kind::remove_sessions};
        change.keys = std::move(ids);
        commit(change);
    }
};

std::uintmax_t size_of(const std::string& path) { return std::filesystem::file_size(path); }

TEST(FileStoreJournal, AChangeAppendsARecordAndLeavesTheSnapshotAlone) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(small_data());
    Changer c{*store, store->load()};
    const auto snapshot = read_file(path);
    const auto journal_before = size_of(path + ".journal");

    c.add_session("ses_a");
    EXPECT_EQ(read_file(path), snapshot);
    EXPECT_GT(size_of(path + ".journal"), journal_before);
    EXPECT_EQ(read_file(path + ".journal").find("ses_a"), std::string::npos);  // sealed, like the snapshot
    EXPECT_TRUE(same_data(open_file_store(path, key_from(1))->load(), c.data));
}

TEST(FileStoreJournal, EveryKindOfChangeReplays) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(2));
    store->save(sample_data());
    Changer c{*store, store->load()};

    StoredVault vault;
    vault.id = "vlt_new";
    vault.name = "new";
    vault.created_at_ms = 5;
    c.data.vaults.push_back(vault);
    c.commit({Kind::add_vault, "vlt_new"});
    c.data.vaults.back().credentials.push_back({"TOKEN", Secret(binary_secret), 1, 6});
    c.commit({Kind::add_credential, "vlt_new", "TOKEN"});
    auto& credential = c.data.vaults.back().credentials.back();
    StoreChange rotate{Kind::rotate_credential, "vlt_new", "TOKEN"};
    rotate.expected_version = credential.version;
    credential = {"TOKEN", Secret(real_secret), 2, 7};
    c.commit(rotate);
    c.data.vaults.back().services.push_back(
        {"svc_new", service(R"({"host":"api.new.test","auth_config":{"type":"bearer","key":"TOKEN"}})")});
    c.commit({Kind::add_service, "vlt_new", "svc_new"});
    c.add_session("ses_a");
    c.add_session("ses_b");
    c.remove_sessions({"ses_a", "ses_1"});
    c.data.vaults.front().services.erase(c.data.vaults.front().services.begin());
    c.commit({Kind::remove_service, c.data.vaults.front().id, "svc_1"});
    c.data.vaults.front().credentials.erase(c.data.vaults.front().credentials.begin());
    c.commit({Kind::remove_credential, c.data.vaults.front().id, "COMPOSIO_API_KEY"});
    const std::string doomed = c.data.vaults.front().id;
    c.data.vaults.erase(c.data.vaults.begin());
    c.commit({Kind::remove_vault, doomed});

    EXPECT_TRUE(same_data(open_file_store(path, key_from(2))->load(), c.data));
    // And through a store object that has just replayed it.
    const auto again = open_file_store(path, key_from(2));
    Changer more{*again, again->load()};
    more.add_session("ses_c");
    c.data.sessions.push_back(session_named("ses_c"));
    c.data.generation += 1;
    EXPECT_TRUE(same_data(open_file_store(path, key_from(2))->load(), c.data));
}

TEST(FileStoreJournal, ATornLastRecordIsLeftOutAndCutOffBeforeTheNextAppend) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(3));
    store->save(small_data());
    Changer c{*store, store->load()};
    c.add_session("ses_a");
    const StoreData after_first = [&] {
        auto d = open_file_store(path, key_from(3))->load();
        return d;
    }();
    const auto whole = size_of(path + ".journal");
    c.add_session("ses_b");
    const auto full = read_file(path + ".journal");
    const auto record = full.size() - whole;

    // Every cut inside the last record, and zeros where its bytes never landed.
    for (std::size_t cut = 1; cut < record; cut += 7) {
        SCOPED_TRACE("cut " + std::to_string(cut));
        write_file(path + ".journal", full.substr(0, full.size() - cut));
        EXPECT_TRUE(same_data(open_file_store(path, key_from(3))->load(), after_first));
    }
    std::string zeroed = full.substr(0, whole) + std::string(record, '\0');
    write_file(path + ".journal", zeroed);
    EXPECT_TRUE(same_data(open_file_store(path, key_from(3))->load(), after_first));

    // The next change follows the last whole record, not the tear.
    write_file(path + ".journal", full.substr(0, full.size() - 5));
    const auto reopened = open_file_store(path, key_from(3));
    Changer next{*reopened, reopened->load()};
    next.add_session("ses_c");
    EXPECT_EQ(size_of(path + ".journal"), whole + (full.size() - whole));  // same record size: one id length
    const auto loaded = open_file_store(path, key_from(3))->load();
    ASSERT_EQ(loaded.sessions.size(), 2u);
    EXPECT_EQ(loaded.sessions[0].id, "ses_a");
    EXPECT_EQ(loaded.sessions[1].id, "ses_c");
}

TEST(FileStoreJournal, ADamagedRecordBeforeWholeOnesIsAnError) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(4));
    store->save(small_data());
    Changer c{*store, store->load()};
    const auto header = size_of(path + ".journal");
    c.add_session("ses_a");
    c.add_session("ses_b");
    auto bytes = read_file(path + ".journal");
    bytes[header + 20] ^= 1;  // inside the first record's ciphertext
    write_file(path + ".journal", bytes);
    EXPECT_NE(store_error(*open_file_store(path, key_from(4))).find("fails authentication"), std::string::npos);
    // The wrong master key reads as the same (the snapshot already says so first).
    EXPECT_NE(store_error(*open_file_store(path, key_from(5))).find("wrong master key"), std::string::npos);
}

TEST(FileStoreJournal, AJournalOfAnEarlierSnapshotIsIgnored) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(6));
    store->save(small_data());
    Changer c{*store, store->load()};
    c.add_session("ses_a");
    const auto old_journal = read_file(path + ".journal");
    // A compaction that got as far as the new snapshot: its journal is not there yet.
    c.data.generation += 1;
    store->save(c.data);
    write_file(path + ".journal", old_journal);
    EXPECT_TRUE(same_data(open_file_store(path, key_from(6))->load(), c.data));
    // The next change starts a journal of its own; both changes are kept.
    const auto reopened = open_file_store(path, key_from(6));
    Changer next{*reopened, reopened->load()};
    next.add_session("ses_b");
    EXPECT_TRUE(same_data(open_file_store(path, key_from(6))->load(), next.data));
}

TEST(FileStoreJournal, AJournalLargerThanTheSnapshotIsFoldedIntoANewOne) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(7));
    store->save(small_data());
    Changer c{*store, store->load()};
    // 64 KiB records: the 1 MiB floor is passed after a few.
    int compactions = 0;
    auto snapshot = read_file(path);
    for (int i = 0; i < 40; ++i) {
        c.add_session("ses_" + std::to_string(i), 64 << 10);
        if (read_file(path) != snapshot) {
            ++compactions;
            snapshot = read_file(path);
            EXPECT_LT(size_of(path + ".journal"), 64u);  // a header only
        }
        ASSERT_LE(size_of(path + ".journal"), std::max<std::uintmax_t>(size_of(path), 1u << 20));
    }
    EXPECT_GE(compactions, 1);
    EXPECT_TRUE(same_data(open_file_store(path, key_from(7))->load(), c.data));
}

TEST(FileStoreJournal, AChangeThatDoesNotFollowTheStoreIsSavedWhole) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(8));
    store->save(small_data());
    Changer c{*store, store->load()};
    // A change the store never took (its save failed) is in the data anyway.
    c.data.sessions.push_back(session_named("ses_unsaved"));
    c.data.generation += 1;
    c.add_session("ses_a");
    EXPECT_TRUE(same_data(open_file_store(path, key_from(8))->load(), c.data));
}

TEST(FileStoreJournal, ManySessionRemovalsReplayInOnePass) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(9));
    StoreData base = small_data();
    for (int i = 0; i < 2000; ++i) base.sessions.push_back(session_named("ses_" + std::to_string(i)));
    store->save(base);
    Changer c{*store, store->load()};
    for (int i = 0; i < 2000; i += 2) c.remove_sessions({"ses_" + std::to_string(i)});
    c.add_session("ses_new");
    c.remove_sessions({"ses_1", "ses_new"});
    const auto loaded = open_file_store(path, key_from(9))->load();
    EXPECT_TRUE(same_data(loaded, c.data));
}

// As FileStoreCrash.KilledWriterLeavesOneWholeState, for appends: whatever
// the kill point, the store loads and holds the first k changes of the
// sequence, for some k at least the number acknowledged.
TEST(FileStoreCrash, KilledAppenderLeavesAPrefixOfTheChanges) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto key = key_from(10);
    const auto seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    constexpr int rounds = 60;
    const auto started = std::chrono::steady_clock::now();
    for (int round = 0; round < rounds; ++round) {
        ::unlink((path + ".journal").c_str());
        const auto base = bulky_data(1, 'a');
        open_file_store(path, key)->save(base);
        const int acknowledged = 1 + static_cast<int>(rng() % 6);
        const auto kill = kill_writer_mid_write(
            [&](const std::function<void()>& ack) {
                const auto child_store = open_file_store(path, key);
                Changer c{*child_store, child_store->load()};
                for (int i = 0; i < 100000; ++i) {
                    c.add_session("ses_" + std::to_string(i), 4096);
                    ack();
                }
            },
            acknowledged, std::chrono::microseconds(rng() % 200));
        ASSERT_TRUE(kill.killed) << "the writer exited by itself, status " << kill.status;
        ASSERT_EQ(kill.acknowledged, acknowledged);

        StoreData loaded;
        ASSERT_NO_THROW(loaded = open_file_store(path, key)->load()) << "round " << round;
        const auto k = loaded.sessions.size();
        ASSERT_GE(k, static_cast<std::size_t>(acknowledged)) << "round " << round;
        ASSERT_EQ(loaded.generation, base.generation + k);
        for (std::size_t i = 0; i < k; ++i) ASSERT_EQ(loaded.sessions[i].id, "ses_" + std::to_string(i));
        // The store goes on from there.
        const auto reopened = open_file_store(path, key);
        Changer next{*reopened, reopened->load()};
        next.add_session("ses_after");
        ASSERT_EQ(open_file_store(path, key)->load().sessions.size(), k + 1);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

}  // namespace
}  // namespace vaultgate
