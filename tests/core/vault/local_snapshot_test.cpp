// A shared store's local snapshot: written from what the database held,
// served at a start while the database cannot be reached (refusing writes and
// reporting unavailable), replaced by a whole read once the database is back;
// no snapshot, or one older than its limit, stops the start with a clear error.
// The "database" is an in-process stand-in; tests/pgstore runs the real one.
#include "store_fixtures.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/time.h>

#include <condition_variable>
#include <ctime>
#include <mutex>

namespace vaultgate {
namespace {

using namespace store_test;
using test::TempDir;

// What a database store does: unreachable while `down`, opened afresh by the
// decorator after a start without it.
struct Database {
    StoreData data = small_data();
    bool down = false;
    int opened = 0;
};

class DatabaseStore final : public VaultStore {
public:
    explicit DatabaseStore(Database& db) : db_(db) {}
    StoreData load() override {
        reach();
        return db_.data;
    }
    void save(const StoreData&) override { throw StoreError("not used"); }
    std::uint64_t apply(const StoreChange&, const StoreData& next) override {
        reach();
        db_.data = next;
        return next.generation;
    }
    bool refresh(StoreData& data, Refresh*) override {
        reach();
        if (data.generation == db_.data.generation) return false;
        data = db_.data;
        return true;
    }
    bool available() const override { return !db_.down; }
    std::string describe() const override { return "database"; }

private:
    void reach() const {
        if (db_.down) throw StoreUnavailable("database: cannot connect");
    }
    Database& db_;
};

// Counts what the snapshot's writer thread did, for a test to wait on.
class WriterEvents {
public:
    void done() {
        {
            std::lock_guard lock(mutex_);
            ++count_;
        }
        changed_.notify_all();
    }
    bool wait_for(int count) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return count_ >= count; });
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int count_ = 0;
};

class LocalSnapshotTest : public ::testing::Test {
protected:
    std::unique_ptr<VaultStore> open(std::chrono::milliseconds max_age = std::chrono::hours(24),
                                     WriterEvents* events = nullptr) {
        // Interval 0: every change is handed to the writer, so that what a
        // test reads back after closing the store is the last state.
        return with_local_snapshot(
            [this]() -> std::unique_ptr<VaultStore> {
                if (db_.down) throw StoreUnavailable("database: cannot connect");
                ++db_.opened;
                return std::make_unique<DatabaseStore>(db_);
            },
            key_from(1),
            LocalSnapshotOptions{path_, std::chrono::milliseconds(0), max_age,
                                 events ? std::function<void()>([events] { events->done(); }) : nullptr});
    }

    // Runs a replica while the database is up; closing it finishes the write.
    void write_snapshot_of(const StoreData& data) {
        db_.data = data;
        const auto replica = open();
        EXPECT_TRUE(same_data(replica->load(), data));
    }

    TempDir dir_;
    std::string path_ = dir_.file("snapshot.db");
    Database db_;
};

StoreData with_session(std::uint64_t generation, const std::string& id) {
    StoreData d = small_data();
    d.generation = generation;
    StoredSession s;
    s.id = id;
    s.token_digest = "digest-" + id;
    s.vault_ids = {"vlt_x"};
    s.created_at_ms = 1;
    s.expires_at_ms = 4102444800000;  // 2100
    d.sessions.push_back(s);
    return d;
}

TEST_F(LocalSnapshotTest, TheSnapshotHoldsWhatTheDatabaseHeld) {
    write_snapshot_of(with_session(7, "ses_a"));
    // The snapshot is a file store of the same key.
    EXPECT_TRUE(same_data(open_file_store(path_, key_from(1))->load(), with_session(7, "ses_a")));
}

TEST_F(LocalSnapshotTest, ChangesAreWrittenToTheSnapshot) {
    db_.data = with_session(7, "ses_a");
    {
        const auto replica = open();
        StoreData data = replica->load();
        StoreData next = with_session(8, "ses_b");
        EXPECT_EQ(replica->apply(StoreChange{StoreChange::Kind::add_session, {}, "ses_b"}, next), 8u);
        // Another replica's change, read in.
        db_.data = with_session(9, "ses_c");
        EXPECT_TRUE(replica->refresh(data));
    }
    EXPECT_TRUE(same_data(open_file_store(path_, key_from(1))->load(), with_session(9, "ses_c")));
}

TEST_F(LocalSnapshotTest, AStartWithoutTheDatabaseServesTheSnapshotAndRefusesWrites) {
    write_snapshot_of(with_session(7, "ses_a"));
    db_.down = true;
    const auto replica = open();
    StoreData data = replica->load();
    EXPECT_TRUE(same_data(data, with_session(7, "ses_a")));
    EXPECT_FALSE(replica->available());
    EXPECT_THROW(replica->apply(StoreChange{StoreChange::Kind::add_session, {}, "ses_b"}, with_session(8, "ses_b")),
                 StoreUnavailable);
    EXPECT_THROW(replica->refresh(data), StoreUnavailable);
    EXPECT_FALSE(replica->available());
}

TEST_F(LocalSnapshotTest, TheDatabaseBackIsReadWholeBeforeAnyWrite) {
    write_snapshot_of(with_session(7, "ses_a"));
    db_.down = true;
    const auto replica = open();
    StoreData data = replica->load();
    // Meanwhile ses_a was revoked and ses_b made, through another replica:
    // at a lower version than the snapshot's, which an in-place read from
    // the snapshot's version would miss.
    db_.data = with_session(3, "ses_b");
    db_.down = false;
    // Connected, but not caught up yet: a write made from the snapshot
    // could undo what changed meanwhile.
    EXPECT_THROW(replica->apply(StoreChange{StoreChange::Kind::add_session, {}, "ses_c"}, with_session(8, "ses_c")),
                 StoreUnavailable);
    VaultStore::Refresh read;
    EXPECT_TRUE(replica->refresh(data, &read));
    EXPECT_TRUE(read.whole);
    EXPECT_TRUE(same_data(data, with_session(3, "ses_b")));
    EXPECT_TRUE(replica->available());
    EXPECT_EQ(replica->apply(StoreChange{StoreChange::Kind::add_session, {}, "ses_c"}, with_session(4, "ses_c")), 4u);
    EXPECT_EQ(db_.opened, 2);  // the first replica's, and this one's once back
}

TEST_F(LocalSnapshotTest, AStartWithoutTheDatabaseOrASnapshotIsAClearError) {
    db_.down = true;
    try {
        open()->load();
        FAIL() << "started without a database or a snapshot";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("database: cannot connect"), std::string::npos) << what;
        EXPECT_NE(what.find(path_ + " does not exist yet"), std::string::npos) << what;
    }
}

TEST_F(LocalSnapshotTest, ASnapshotThatCannotBeLookedAtIsAClearError) {
    // A regular file where the snapshot's directory should be.
    write_file(dir_.file("plain"), "x");
    path_ = dir_.file("plain") + "/snapshot.db";
    db_.down = true;
    try {
        open()->load();
        FAIL() << "started without a database or a readable snapshot";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("database: cannot connect"), std::string::npos) << what;
        EXPECT_NE(what.find(path_ + " cannot be read: Not a directory"), std::string::npos) << what;
    }
}

TEST_F(LocalSnapshotTest, ASnapshotOlderThanItsLimitIsNotServed) {
    write_snapshot_of(with_session(7, "ses_a"));
    const timeval two_days_ago{std::time(nullptr) - 2 * 86400, 0};
    const timeval times[2] = {two_days_ago, two_days_ago};
    ASSERT_EQ(::utimes(path_.c_str(), times), 0);
    db_.down = true;
    try {
        open(std::chrono::hours(24))->load();
        FAIL() << "served a snapshot two days old";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("longer than store.snapshot_max_age (86400 s)"), std::string::npos) << what;
        EXPECT_NE(what.find("revoked sessions"), std::string::npos) << what;
    }
    // A longer limit takes it.
    EXPECT_TRUE(same_data(open(std::chrono::hours(72))->load(), with_session(7, "ses_a")));
}

TEST_F(LocalSnapshotTest, AQuietRefreshConfirmsTheSnapshotSoItsAgeCountsFromThen) {
    WriterEvents events;
    db_.data = with_session(7, "ses_a");
    {
        const auto replica = open(std::chrono::hours(24), &events);
        StoreData data = replica->load();
        ASSERT_TRUE(events.wait_for(1));  // written at the start
        // As if the replica had served for two days without a change.
        const timeval two_days_ago{std::time(nullptr) - 2 * 86400, 0};
        const timeval times[2] = {two_days_ago, two_days_ago};
        ASSERT_EQ(::utimes(path_.c_str(), times), 0);
        EXPECT_FALSE(replica->refresh(data));  // the database holds the same
        ASSERT_TRUE(events.wait_for(2));
    }
    struct stat st {};
    ASSERT_EQ(::stat(path_.c_str(), &st), 0);
    EXPECT_GT(st.st_mtim.tv_sec, std::time(nullptr) - 600);
    db_.down = true;
    EXPECT_TRUE(same_data(open()->load(), with_session(7, "ses_a")));
}

TEST_F(LocalSnapshotTest, ADamagedSnapshotIsAnErrorNotAnEmptyStore) {
    write_snapshot_of(with_session(7, "ses_a"));
    write_file(path_, "not a store");
    db_.down = true;
    EXPECT_THROW(open()->load(), StoreError);
}

TEST_F(LocalSnapshotTest, ASnapshotThatCannotBeWrittenLeavesTheReplicaServing) {
    // A directory where the file should be: every write fails.
    ASSERT_EQ(::mkdir(path_.c_str(), 0700), 0);
    db_.data = with_session(7, "ses_a");
    const auto replica = open();
    EXPECT_TRUE(same_data(replica->load(), with_session(7, "ses_a")));
    EXPECT_TRUE(replica->available());
}

}  // namespace
}  // namespace vaultgate
