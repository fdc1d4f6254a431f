// The encrypted store is tested as an attacker and a power cut would treat it:
// every bit flipped, every truncation, a writer killed at random points. Each
// must end in a clear StoreError or in one of the states that was saved, never
// in a crash or an empty store.
#include "killed_writer.hpp"
#include "store_fixtures.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>

namespace vaultgate {
namespace {

using namespace store_test;
using test::TempDir;

TEST(FileStore, RoundTripsEverything) {
    const TempDir dir;
    const auto path = dir.file("vaultgate.db");
    const auto store = open_file_store(path, key_from(1));
    const auto data = sample_data();
    store->save(data);
    EXPECT_TRUE(same_data(store->load(), data));
    // A second store object with the same key reads it too (nothing is cached).
    EXPECT_TRUE(same_data(open_file_store(path, key_from(1))->load(), data));
    EXPECT_NE(store->describe().find(path), std::string::npos);
}

TEST(FileStore, ASessionStoredWithoutItsCreationTimeReadsAsZero) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    write_file(path, encrypted_store_file(key_from(1), R"({"generation":1,"vaults":[],"sessions":[{"id":"ses_x",
        "token_digest":"d","vault_ids":[],"policy":{},"policy_name":"","expires_at_ms":5,"source":null}]})"));
    const auto data = open_file_store(path, key_from(1))->load();
    ASSERT_EQ(data.sessions.size(), 1u);
    EXPECT_EQ(data.sessions[0].created_at_ms, 0);
    EXPECT_EQ(data.sessions[0].expires_at_ms, 5);
}

TEST(FileStore, SaveReplacesTheWholeState) {
    const TempDir dir;
    const auto store = open_file_store(dir.file("s.db"), key_from(1));
    store->save(sample_data());
    StoreData smaller;
    smaller.generation = 43;
    store->save(smaller);
    EXPECT_TRUE(same_data(store->load(), smaller));
}

TEST(FileStore, MissingFileLoadsEmpty) {
    const TempDir dir;
    const auto data = open_file_store(dir.file("absent.db"), key_from(1))->load();
    EXPECT_TRUE(data.vaults.empty());
    EXPECT_TRUE(data.sessions.empty());
    EXPECT_EQ(data.generation, 0u);
}

TEST(FileStore, FileNeverHoldsASecretInTheClear) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(sample_data());
    const auto raw = read_file(path);
    for (const std::string& needle :
         {real_secret, base64(real_secret), binary_secret, base64(binary_secret), std::string("composio"),
          std::string("backend.composio.dev"), std::string("COMPOSIO_API_KEY")}) {
        EXPECT_EQ(raw.find(needle), std::string::npos) << needle;
    }
    // The master key is not in there either.
    EXPECT_EQ(raw.find(key_from(1).reveal()), std::string::npos);
}

TEST(FileStore, TwoSavesOfTheSameDataDiffer) {
    // A fresh nonce per save: equal plaintexts must not give equal files.
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(sample_data());
    const auto first = read_file(path);
    store->save(sample_data());
    EXPECT_NE(read_file(path), first);
    EXPECT_EQ(read_file(path).size(), first.size());
}

TEST(FileStore, FileModeIs0600WhateverTheUmask) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto old = ::umask(0);
    open_file_store(path, key_from(1))->save(sample_data());
    ::umask(old);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(FileStore, LeavesNoTempFilesBehind) {
    const TempDir dir;
    const auto store = open_file_store(dir.file("s.db"), key_from(1));
    for (int i = 0; i < 3; ++i) store->save(sample_data());
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.insert(e.path().filename());
    // The snapshot and its (empty) journal.
    EXPECT_EQ(names, (std::set<std::string>{"s.db", "s.db.journal"}));
}

TEST(FileStore, WrongKeyIsAClearError) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    open_file_store(path, key_from(1))->save(sample_data());
    const auto error = store_error(*open_file_store(path, key_from(2)));
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find("wrong master key or damaged store"), std::string::npos) << error;
}

TEST(FileStore, MasterKeyMustBe32Bytes) {
    const TempDir dir;
    EXPECT_THROW(open_file_store(dir.file("s.db"), Secret(std::string(31, 'k'))), StoreError);
    EXPECT_THROW(open_file_store(dir.file("s.db"), Secret(std::string(33, 'k'))), StoreError);
    EXPECT_THROW(open_file_store(dir.file("s.db"), Secret()), StoreError);
    EXPECT_THROW(open_file_store("", key_from(1)), StoreError);
}

TEST(FileStore, EveryBitFlipIsRefused) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(small_data());
    const auto good = read_file(path);
    ASSERT_GT(good.size(), 45u);
    // Patched in place: rewriting the file each time would make ext4 flush
    // it on every close, and the test would take seconds.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    for (std::size_t offset = 0; offset < good.size(); ++offset) {
        for (int bit = 0; bit < 8; ++bit) {
            const char bad = static_cast<char>(good[offset] ^ (1 << bit));
            ASSERT_EQ(::pwrite(fd, &bad, 1, static_cast<off_t>(offset)), 1);
            const auto error = store_error(*store);
            EXPECT_FALSE(error.empty()) << "offset " << offset << " bit " << bit;
            EXPECT_NE(error.find(path), std::string::npos) << error;
        }
        ASSERT_EQ(::pwrite(fd, &good[offset], 1, static_cast<off_t>(offset)), 1);
    }
    ::close(fd);
    EXPECT_TRUE(same_data(store->load(), small_data()));
}

TEST(FileStore, EveryTruncationIsRefused) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(small_data());
    const auto good = read_file(path);
    // Shortened one byte at a time, from the end, for the same reason.
    for (std::size_t len = good.size(); len-- > 0;) {
        ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(len)), 0);
        const auto error = store_error(*store);
        EXPECT_NE(error.find("truncated"), std::string::npos) << "length " << len << ": " << error;
    }
}

TEST(FileStore, TrailingBytesAreRefused) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(small_data());
    write_file(path, read_file(path) + "x");
    EXPECT_NE(store_error(*store).find("damaged store"), std::string::npos);
}

TEST(FileStore, EmptyFileIsTruncatedNotFirstRun) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    write_file(path, "");
    const auto error = store_error(*open_file_store(path, key_from(1)));
    EXPECT_NE(error.find(path + ": truncated"), std::string::npos) << error;
}

TEST(FileStore, UnsupportedVersionIsNamed) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = open_file_store(path, key_from(1));
    store->save(small_data());
    auto bytes = read_file(path);
    bytes[8] = 2;
    write_file(path, bytes);
    const auto error = store_error(*store);
    EXPECT_NE(error.find("unsupported format version 2"), std::string::npos) << error;
}

TEST(FileStore, OtherFilesAreNotAStore) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    for (const std::string content : {"{\"vaults\":[]}\n", "hello", "SQLite format 3"}) {
        write_file(path, content);
        const auto error = store_error(*open_file_store(path, key_from(1)));
        EXPECT_NE(error.find("not a vaultgate store"), std::string::npos) << error;
    }
}

TEST(FileStore, UnreadablePathsAreErrorsNotEmptyStores) {
    const TempDir dir;
    // A directory where the file should be.
    std::filesystem::create_directory(dir.file("d.db"));
    EXPECT_NE(store_error(*open_file_store(dir.file("d.db"), key_from(1))).find("d.db"), std::string::npos);
    // A file where a directory should be.
    write_file(dir.file("f"), "x");
    EXPECT_FALSE(store_error(*open_file_store(dir.file("f") + "/s.db", key_from(1))).empty());
}

TEST(FileStore, SaveIntoMissingDirectoryFailsClearly) {
    const TempDir dir;
    const auto path = dir.file("nope/s.db");
    try {
        open_file_store(path, key_from(1))->save(small_data());
        FAIL() << "save succeeded";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(FileStore, FailedRenameRemovesTheTempFile) {
    const TempDir dir;
    // rename() cannot replace a non-empty directory, so the save fails after
    // the temp file was written.
    const auto path = dir.file("s.db");
    std::filesystem::create_directories(path + "/inside");
    EXPECT_THROW(open_file_store(path, key_from(1))->save(small_data()), StoreError);
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.insert(e.path().filename());
    EXPECT_EQ(names, (std::set<std::string>{"s.db"}));
}

pid_t dead_pid() {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    ::waitpid(pid, nullptr, 0);
    return pid;
}

void set_age(const std::string& path, std::chrono::seconds age) {
    const auto when = std::chrono::system_clock::now() - age;
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = std::chrono::system_clock::to_time_t(when);
    times[0].tv_nsec = times[1].tv_nsec = 0;
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(FileStore, NextSaveRemovesOldTempFilesOfDeadWriters) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto pid = std::to_string(dead_pid());
    const auto stale = path + ".tmp-" + pid + "-0011223344556677";
    const auto fresh = path + ".tmp-" + pid + "-8899aabbccddeeff";
    const auto live = path + ".tmp-1-0011223344556677";  // init never dies
    const auto other = dir.file("other.db.tmp-" + pid + "-00");
    for (const auto& f : {stale, fresh, live, other}) write_file(f, "partial");
    for (const auto& f : {stale, live, other}) set_age(f, std::chrono::hours(1));

    const auto store = open_file_store(path, key_from(1));
    // Load ignores leftovers.
    EXPECT_TRUE(store->load().vaults.empty());
    store->save(small_data());
    EXPECT_FALSE(std::filesystem::exists(stale));
    EXPECT_TRUE(std::filesystem::exists(fresh));  // its writer might just be slow
    EXPECT_TRUE(std::filesystem::exists(live));
    EXPECT_TRUE(std::filesystem::exists(other));  // another store's
    EXPECT_TRUE(same_data(store->load(), small_data()));
}

// A writer killed at arbitrary points must leave the old or the new file.
TEST(FileStoreCrash, KilledWriterLeavesOneWholeState) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto key = key_from(9);
    const auto a = bulky_data(1000, 'a');
    const auto b = bulky_data(2000, 'b');
    const auto store = open_file_store(path, key);
    store->save(a);

    const auto seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    constexpr int rounds = 100;
    int saw_a = 0;
    int saw_b = 0;
    const auto started = std::chrono::steady_clock::now();
    for (int round = 0; round < rounds; ++round) {
        // Let it finish 1..4 saves, then kill it somewhere in the next one.
        const int saves = 1 + static_cast<int>(rng() % 4);
        const auto kill = kill_writer_mid_write(
            [&](const std::function<void()>& ack) {
                const auto child_store = open_file_store(path, key);
                for (std::uint64_t i = 0;; ++i) {
                    child_store->save(i % 2 == 0 ? b : a);
                    ack();
                }
            },
            saves, std::chrono::microseconds(rng() % 300));
        ASSERT_TRUE(kill.killed) << "the writer exited by itself, status " << kill.status;
        ASSERT_EQ(kill.acknowledged, saves);

        StoreData loaded;
        ASSERT_NO_THROW(loaded = store->load()) << "round " << round;
        if (quietly_same(loaded, a))
            ++saw_a;
        else if (quietly_same(loaded, b))
            ++saw_b;
        else
            FAIL() << "round " << round << ": loaded state is neither A nor B (generation " << loaded.generation << ")";
    }
    // Both states must have been seen, or the test did not exercise much.
    EXPECT_GT(saw_a, 0);
    EXPECT_GT(saw_b, 0);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));

    // Temp files left by killed writers show that kills landed mid-save.
    int leftovers = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
        leftovers += e.path().filename().string().starts_with("s.db.tmp-") ? 1 : 0;
    RecordProperty("killed_mid_write", leftovers);
    RecordProperty("saw_a", saw_a);
    RecordProperty("saw_b", saw_b);

    // Leftover temp files do not disturb a later save and load.
    store->save(b);
    EXPECT_TRUE(same_data(store->load(), b));
}

}  // namespace
}  // namespace vaultgate
