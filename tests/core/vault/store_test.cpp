// The encrypted store is tested as an attacker and a power cut would treat it:
// every bit flipped, every truncation, a writer killed at random points. Each
// must end in a clear StoreError or in one of the states that was saved, never
// in a crash or an empty store.
#include "temp_dir.hpp"
#include "vaultgate/vault/store.hpp"

#include "vaultgate/config/json_codec.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace vaultgate {
namespace {

using test::TempDir;
// Unset for one test until set(), and put back after.
using EnvVar = test::ScopedEnv;

Secret key_from(char seed) {
    std::string k(32, '\0');
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<char>(seed * 31 + i * 7);
    return Secret(k);
}

std::string base64(std::string_view in) {
    std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

ServiceConfig service(const std::string& text) {
    std::string error;
    auto s = service_from_json(nlohmann::json::parse(text), &error);
    if (!s) throw std::runtime_error(error);
    return *s;
}

EgressPolicy policy(const std::string& text, const std::string& name) {
    std::string error;
    auto p = policy_from_json(nlohmann::json::parse(text), &error);
    if (!p) throw std::runtime_error(error);
    p->name = name;
    return *p;
}

const std::string real_secret = "sk_live_REALsecretValue_0123456789abcdef";
// Bytes that are not UTF-8 and not text: the store must keep any byte string.
const std::string binary_secret = std::string("\x00\xff\xfe\x80zz\n\r\"\\", 10) + "tail";

StoreData sample_data() {
    StoreData d;
    d.generation = 42;
    StoredVault v;
    v.id = "vlt_aaaaaaaaaaaaaaaaaaaa";
    v.name = "composio";
    v.created_at_ms = 1764442800123;
    v.credentials.push_back({"COMPOSIO_API_KEY", Secret(real_secret), 3, 1764442800999});
    v.credentials.push_back({"BINARY", Secret(binary_secret), 1, -5});
    v.credentials.push_back({"EMPTY", Secret(""), 7, 0});
    v.services.push_back({"svc_1", service(R"({"host":"backend.composio.dev","redact_response":true,
        "auth_config":{"type":"api-key","header":"x-api-key","key":"COMPOSIO_API_KEY"}})")});
    v.services.push_back({"svc_2", service(R"({"host":"*.example.com","port":8443,"path_prefix":"/v1",
        "auth_config":{"type":"bearer","key":"BINARY"}})")});
    v.services.push_back({"svc_3", service(R"({"host":"git.example.org",
        "auth_config":{"type":"basic","user":"bot","key":"EMPTY"}})")});
    v.services.push_back({"svc_4", service(R"({"host":"api.example.net",
        "auth_config":{"type":"header","header":"X-Token","template":"Token {secret}","key":"COMPOSIO_API_KEY"}})")});
    v.services.push_back({"svc_5", service(R"({"host":"maps.example.com",
        "auth_config":{"type":"query","param":"api_key","key":"COMPOSIO_API_KEY"}})")});
    d.vaults.push_back(std::move(v));

    StoredVault empty;
    empty.id = "vlt_bbbbbbbbbbbbbbbbbbbb";
    empty.name = "empty-vault";
    d.vaults.push_back(std::move(empty));

    StoredSession s;
    s.id = "ses_1";
    s.token_digest = token_digest("the-token");
    s.vault_ids = {"vlt_aaaaaaaaaaaaaaaaaaaa", "vlt_bbbbbbbbbbbbbbbbbbbb"};
    s.policy = policy(R"({"allow_http":true,"allowed_domains":["*.example.com:8443","pypi.org"],
                          "allowed_cidrs":["10.0.0.0/8","fd00::/8"]})",
                      "inline");
    s.expires_at_ms = 1764443400123;
    s.source = parse_cidr("192.0.2.0/24");
    d.sessions.push_back(std::move(s));

    StoredSession t;
    t.id = "ses_2";
    t.token_digest = token_digest("other");
    t.policy = policy("{}", "");
    d.sessions.push_back(std::move(t));
    return d;
}

// A few kilobytes, so a save takes long enough to be killed in the middle of.
StoreData bulky_data(std::uint64_t generation, char fill) {
    StoreData d;
    d.generation = generation;
    for (int i = 0; i < 8; ++i) {
        StoredVault v;
        v.id = "vlt_" + std::string(20, fill) + std::to_string(i);
        v.name = "vault-" + std::to_string(i);
        v.created_at_ms = static_cast<std::int64_t>(generation) * 1000 + i;
        for (int k = 0; k < 4; ++k)
            v.credentials.push_back({"K" + std::to_string(k), Secret(std::string(100, fill) + std::to_string(k)),
                                     generation + static_cast<std::uint64_t>(k), i * 10 + k});
        v.services.push_back({"svc_" + std::to_string(i), service(R"({"host":"h.example.com",
            "auth_config":{"type":"bearer","key":"K0"}})")});
        d.vaults.push_back(std::move(v));
    }
    return d;
}

void expect_same_service(const ServiceConfig& a, const ServiceConfig& b) {
    EXPECT_EQ(service_to_json(a), service_to_json(b));
    EXPECT_EQ(a.auth.header, b.auth.header);  // also for types whose JSON omits it
}

void expect_same_policy(const EgressPolicy& a, const EgressPolicy& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(policy_to_json(a), policy_to_json(b));
}

// Field by field, values included; the structs have no operator==.
bool same_data(const StoreData& a, const StoreData& b) {
    const auto before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    EXPECT_EQ(a.generation, b.generation);
    EXPECT_EQ(a.vaults.size(), b.vaults.size());
    for (std::size_t i = 0; i < std::min(a.vaults.size(), b.vaults.size()); ++i) {
        const auto& x = a.vaults[i];
        const auto& y = b.vaults[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.created_at_ms, y.created_at_ms);
        EXPECT_EQ(x.credentials.size(), y.credentials.size());
        for (std::size_t k = 0; k < std::min(x.credentials.size(), y.credentials.size()); ++k) {
            EXPECT_EQ(x.credentials[k].name, y.credentials[k].name);
            EXPECT_EQ(x.credentials[k].value.reveal(), y.credentials[k].value.reveal());
            EXPECT_EQ(x.credentials[k].version, y.credentials[k].version);
            EXPECT_EQ(x.credentials[k].updated_at_ms, y.credentials[k].updated_at_ms);
        }
        EXPECT_EQ(x.services.size(), y.services.size());
        for (std::size_t k = 0; k < std::min(x.services.size(), y.services.size()); ++k) {
            EXPECT_EQ(x.services[k].id, y.services[k].id);
            expect_same_service(x.services[k].config, y.services[k].config);
        }
    }
    EXPECT_EQ(a.sessions.size(), b.sessions.size());
    for (std::size_t i = 0; i < std::min(a.sessions.size(), b.sessions.size()); ++i) {
        const auto& x = a.sessions[i];
        const auto& y = b.sessions[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_EQ(x.token_digest, y.token_digest);
        EXPECT_EQ(x.vault_ids, y.vault_ids);
        expect_same_policy(x.policy, y.policy);
        EXPECT_EQ(x.expires_at_ms, y.expires_at_ms);
        EXPECT_EQ(x.source.has_value(), y.source.has_value());
        if (x.source && y.source) {
            EXPECT_EQ(x.source->base, y.source->base);
            EXPECT_EQ(x.source->prefix_len, y.source->prefix_len);
        }
    }
    return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() == before;
}

// Compares without recording failures: for "equals A or B".
bool quietly_same(const StoreData& a, const StoreData& b) {
    if (a.generation != b.generation || a.vaults.size() != b.vaults.size() || a.sessions.size() != b.sessions.size())
        return false;
    for (std::size_t i = 0; i < a.vaults.size(); ++i) {
        const auto& x = a.vaults[i];
        const auto& y = b.vaults[i];
        if (x.id != y.id || x.name != y.name || x.created_at_ms != y.created_at_ms ||
            x.credentials.size() != y.credentials.size() || x.services.size() != y.services.size())
            return false;
        for (std::size_t k = 0; k < x.credentials.size(); ++k) {
            const auto& c = x.credentials[k];
            const auto& d = y.credentials[k];
            if (c.name != d.name || c.value.reveal() != d.value.reveal() || c.version != d.version ||
                c.updated_at_ms != d.updated_at_ms)
                return false;
        }
        for (std::size_t k = 0; k < x.services.size(); ++k)
            if (x.services[k].id != y.services[k].id ||
                service_to_json(x.services[k].config) != service_to_json(y.services[k].config))
                return false;
    }
    return true;
}

std::string store_error(VaultStore& store) {
    try {
        store.load();
    } catch (const StoreError& e) {
        return e.what();
    }
    return "";
}

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
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
    EXPECT_EQ(names, std::vector<std::string>{"s.db"});
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

// A small store keeps "every offset times every bit" fast.
StoreData small_data() {
    StoreData d;
    d.generation = 1;
    StoredVault v;
    v.id = "vlt_x";
    v.name = "v";
    v.credentials.push_back({"K", Secret("secret"), 1, 2});
    d.vaults.push_back(std::move(v));
    return d;
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
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
    EXPECT_EQ(names, std::vector<std::string>{"s.db"});
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
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::close(fds[0]);
            try {
                const auto child_store = open_file_store(path, key);
                for (std::uint64_t i = 0;; ++i) {
                    child_store->save(i % 2 == 0 ? b : a);
                    const char done = 1;
                    if (::write(fds[1], &done, 1) != 1) ::_exit(0);
                }
            } catch (...) {
                ::_exit(3);
            }
        }
        ::close(fds[1]);
        // Let it finish 1..4 saves, then kill it somewhere in the next one.
        const int saves = 1 + static_cast<int>(rng() % 4);
        int seen = 0;
        while (seen < saves) {
            char c;
            const auto n = ::read(fds[0], &c, 1);
            if (n == 1) ++seen;
            if (n == 0) break;  // the child died on its own: reported below
        }
        // A short random spin moves the kill point around within a save.
        const auto spin = std::chrono::microseconds(rng() % 300);
        for (const auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < spin;) {
        }
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        ::close(fds[0]);
        ASSERT_TRUE(WIFSIGNALED(status)) << "the writer exited by itself, status " << status;
        ASSERT_EQ(seen, saves);

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

// --- rollback protection -------------------------------------------------------------

std::unique_ptr<VaultStore> guarded(const std::string& path, bool allow_rollback = false) {
    return guard_against_rollback(open_file_store(path, key_from(1)), generation_record_path(path), allow_rollback);
}

StoreData at_generation(std::uint64_t generation) {
    StoreData d = small_data();
    d.generation = generation;
    return d;
}

TEST(RollbackGuard, RecordFollowsEverySaveAndGenerationsMustRise) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto record = generation_record_path(path);
    EXPECT_EQ(record, path + ".generation");
    const auto store = guarded(path);
    // No store and no record: a first start, recorded as generation 0.
    EXPECT_EQ(store->load().generation, 0u);
    EXPECT_EQ(read_file(record), "0\n");
    for (std::uint64_t g = 1; g <= 3; ++g) {
        store->save(at_generation(g));
        EXPECT_EQ(read_file(record), std::to_string(g) + "\n");
        EXPECT_EQ(open_file_store(path, key_from(1))->load().generation, g);
    }
    // A save that does not raise the generation would give two states one number.
    for (std::uint64_t g : {3u, 2u, 0u}) {
        EXPECT_THROW(store->save(at_generation(g)), StoreError) << g;
        EXPECT_EQ(read_file(record), "3\n");
    }
    EXPECT_EQ(open_file_store(path, key_from(1))->load().generation, 3u);
    struct stat st {};
    ASSERT_EQ(::stat(record.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    // Written via a temp file, of which nothing is left.
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.insert(e.path().filename());
    EXPECT_EQ(names, (std::set<std::string>{"s.db", "s.db.generation"}));
}

TEST(RollbackGuard, AnOlderCopyOfTheStoreIsRefused) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = guarded(path);
    store->load();
    store->save(at_generation(1));
    const auto old_copy = read_file(path);
    store->save(at_generation(2));
    write_file(path, old_copy);

    const auto error = store_error(*guarded(path));
    EXPECT_NE(error.find(path + ": the store is at generation 1, older than generation 2 last seen (" + path +
                         ".generation)"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("--allow-rollback"), std::string::npos) << error;
    EXPECT_EQ(read_file(path + ".generation"), "2\n");  // a refusal changes nothing
    // A store file gone missing is a rollback to nothing.
    std::filesystem::remove(path);
    EXPECT_NE(store_error(*guarded(path)).find("the store is at generation 0, older than generation 2"),
              std::string::npos);
}

TEST(RollbackGuard, AllowRollbackAcceptsTheOlderStoreAndRecordsIt) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    const auto store = guarded(path);
    store->load();
    store->save(at_generation(5));
    const auto old_copy = read_file(path);
    store->save(at_generation(9));
    write_file(path, old_copy);

    const auto allowed = guarded(path, /*allow_rollback=*/true);
    EXPECT_EQ(allowed->load().generation, 5u);
    EXPECT_EQ(read_file(path + ".generation"), "5\n");
    // Writes go on from the accepted store, and a plain start accepts it now.
    allowed->save(at_generation(6));
    EXPECT_EQ(guarded(path)->load().generation, 6u);
}

TEST(RollbackGuard, ANewerStoreThanTheRecordIsAcceptedAndRecorded) {
    // A crash between the store's rename and the record's leaves this.
    const TempDir dir;
    const auto path = dir.file("s.db");
    open_file_store(path, key_from(1))->save(at_generation(7));
    write_file(path + ".generation", "4\n");
    EXPECT_EQ(guarded(path)->load().generation, 7u);
    EXPECT_EQ(read_file(path + ".generation"), "7\n");
    // No record at all (first start of this version): created.
    std::filesystem::remove(path + ".generation");
    EXPECT_EQ(guarded(path)->load().generation, 7u);
    EXPECT_EQ(read_file(path + ".generation"), "7\n");
}

TEST(RollbackGuard, ARecordThatIsNotOneIsRefusedWithoutHanging) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    open_file_store(path, key_from(1))->save(at_generation(3));
    const auto record = path + ".generation";
    for (const char* text : {"", "x\n", "-1\n", "3 \n", "99999999999999999999999\n", "18446744073709551616\n"}) {
        write_file(record, text);
        const auto error = store_error(*guarded(path));
        EXPECT_NE(error.find(record + ": expected a generation number"), std::string::npos) << text << ": " << error;
    }
    // A FIFO is not opened for a blocking read; a symlink is not followed.
    std::filesystem::remove(record);
    ASSERT_EQ(::mkfifo(record.c_str(), 0600), 0);
    EXPECT_NE(store_error(*guarded(path)).find(record + ": not a regular file"), std::string::npos);
    std::filesystem::remove(record);
    write_file(dir.file("elsewhere"), "1\n");
    std::filesystem::create_symlink(dir.file("elsewhere"), record);
    EXPECT_NE(store_error(*guarded(path)).find(record + ": cannot open"), std::string::npos);
    // --allow-rollback replaces it with the store's generation.
    EXPECT_EQ(guarded(path, /*allow_rollback=*/true)->load().generation, 3u);
    EXPECT_EQ(read_file(record), "3\n");
    EXPECT_EQ(read_file(dir.file("elsewhere")), "1\n");
}

// AES-256-GCM under the store's derived key, as the file store writes, but of
// any payload: for stores this version of vaultgate would not write.
std::string encrypted_store_file(const Secret& master, const std::string& payload) {
    unsigned char key[32];
    EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
    EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
    char digest[] = "SHA256";
    std::string master_bytes(master.reveal());
    std::string info = "vaultgate store v1";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, master_bytes.data(), master_bytes.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
        OSSL_PARAM_construct_end(),
    };
    EXPECT_EQ(EVP_KDF_derive(kctx, key, sizeof key, params), 1);
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);

    std::string file("VGSTORE\0", 8);
    file += '\x01';
    file += std::string(12, '\x07');  // a nonce; used once, for this test
    for (int i = 7; i >= 0; --i) file += static_cast<char>((payload.size() >> (8 * i)) & 0xff);
    const auto* u = reinterpret_cast<const unsigned char*>(file.data());
    std::string cipher(payload.size(), '\0');
    unsigned char tag[16];
    int n = 0;
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    EXPECT_EQ(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key, u + 9), 1);
    EXPECT_EQ(EVP_EncryptUpdate(ctx, nullptr, &n, u, static_cast<int>(file.size())), 1);
    EXPECT_EQ(EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(cipher.data()), &n,
                                reinterpret_cast<const unsigned char*>(payload.data()), static_cast<int>(payload.size())),
              1);
    EXPECT_EQ(EVP_EncryptFinal_ex(ctx, tag, &n), 1);
    EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, sizeof tag, tag), 1);
    EVP_CIPHER_CTX_free(ctx);
    return file + cipher + std::string(reinterpret_cast<const char*>(tag), sizeof tag);
}

TEST(RollbackGuard, AStoreWithoutAGenerationReadsAsZeroAndGetsOneOnTheNextSave) {
    const TempDir dir;
    const auto path = dir.file("s.db");
    write_file(path, encrypted_store_file(key_from(1), R"({"vaults":[{"id":"vlt_x","name":"v","created_at_ms":1,
        "credentials":[],"services":[]}],"sessions":[]})"));
    const auto store = guarded(path);
    const auto data = store->load();
    EXPECT_EQ(data.generation, 0u);
    ASSERT_EQ(data.vaults.size(), 1u);
    EXPECT_EQ(data.vaults[0].name, "v");
    EXPECT_EQ(read_file(path + ".generation"), "0\n");
    StoreData next = data;
    next.generation = 1;
    store->save(next);
    EXPECT_EQ(open_file_store(path, key_from(1))->load().generation, 1u);
    // The same payload with a generation of the wrong type is damage, not an old store.
    write_file(path, encrypted_store_file(key_from(1), R"({"generation":"7","vaults":[],"sessions":[]})"));
    EXPECT_NE(store_error(*open_file_store(path, key_from(1))).find("payload.generation: expected an unsigned integer"),
              std::string::npos);
}

// --- master key ---------------------------------------------------------------------

struct KeyEnv {
    EnvVar env{"VAULTGATE_MASTER_KEY"};
    EnvVar credentials{"CREDENTIALS_DIRECTORY"};
};

std::string key_error(const std::optional<std::string>& file) {
    try {
        load_master_key(file);
    } catch (const StoreError& e) {
        return e.what();
    }
    return "";
}

TEST(MasterKey, FileOf32Bytes) {
    const KeyEnv guard;
    const TempDir dir;
    write_file(dir.file("key"), key_from(3).reveal());
    EXPECT_EQ(load_master_key(dir.file("key")).reveal(), key_from(3).reveal());
}

TEST(MasterKey, FileWinsOverEnvironment) {
    KeyEnv guard;
    const TempDir dir;
    write_file(dir.file("key"), key_from(3).reveal());
    guard.env.set(base64(key_from(4).reveal()));
    EXPECT_EQ(load_master_key(dir.file("key")).reveal(), key_from(3).reveal());
}

TEST(MasterKey, FileOfWrongSizeNamesFileAndSize) {
    const KeyEnv guard;
    const TempDir dir;
    const auto path = dir.file("key");
    write_file(path, std::string(31, 'k'));
    auto error = key_error(path);
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find("31 bytes"), std::string::npos) << error;
    // base64 text is not accepted in the file: it must be the raw 32 bytes.
    write_file(path, base64(key_from(3).reveal()) + "\n");
    error = key_error(path);
    EXPECT_NE(error.find("45 bytes"), std::string::npos) << error;
    write_file(path, std::string(10000, 'k'));
    error = key_error(path);
    EXPECT_NE(error.find("more than"), std::string::npos) << error;
}

TEST(MasterKey, MissingFileIsAnError) {
    const KeyEnv guard;
    const TempDir dir;
    const auto error = key_error(dir.file("absent"));
    EXPECT_NE(error.find(dir.file("absent")), std::string::npos) << error;
}

TEST(MasterKey, EnvironmentBase64) {
    KeyEnv guard;
    guard.env.set(base64(key_from(5).reveal()));
    EXPECT_EQ(load_master_key(std::nullopt).reveal(), key_from(5).reveal());
    guard.env.set(base64(key_from(5).reveal()) + "\n");
    EXPECT_EQ(load_master_key(std::nullopt).reveal(), key_from(5).reveal());
}

TEST(MasterKey, BadEnvironmentIsRefusedWithoutEchoingIt) {
    KeyEnv guard;
    const std::string not_base64 = "this is my very secret passphrase!!";
    guard.env.set(not_base64);
    auto error = key_error(std::nullopt);
    EXPECT_NE(error.find("VAULTGATE_MASTER_KEY"), std::string::npos) << error;
    EXPECT_EQ(error.find(not_base64), std::string::npos) << error;
    EXPECT_EQ(error.find("passphrase"), std::string::npos) << error;

    const auto short_key = base64(std::string(16, 'q'));
    guard.env.set(short_key);
    error = key_error(std::nullopt);
    EXPECT_NE(error.find("decodes to 16 bytes"), std::string::npos) << error;
    EXPECT_EQ(error.find(short_key), std::string::npos) << error;

    guard.env.set("");
    EXPECT_NE(key_error(std::nullopt).find("VAULTGATE_MASTER_KEY"), std::string::npos);
}

TEST(MasterKey, SystemdCredential) {
    KeyEnv guard;
    const TempDir dir;
    guard.credentials.set(dir.path());
    write_file(dir.file("master-key"), key_from(6).reveal());
    EXPECT_EQ(load_master_key(std::nullopt).reveal(), key_from(6).reveal());
    write_file(dir.file("master-key"), base64(key_from(7).reveal()) + "\n");
    EXPECT_EQ(load_master_key(std::nullopt).reveal(), key_from(7).reveal());
    write_file(dir.file("master-key"), base64(key_from(7).reveal()));
    EXPECT_EQ(load_master_key(std::nullopt).reveal(), key_from(7).reveal());

    write_file(dir.file("master-key"), "short");
    const auto error = key_error(std::nullopt);
    EXPECT_NE(error.find("master-key"), std::string::npos) << error;
    EXPECT_NE(error.find("5 bytes"), std::string::npos) << error;
    EXPECT_EQ(error.find("short"), std::string::npos) << error;

    // The environment variable comes first.
    guard.env.set(base64(key_from(8).reveal()));
    EXPECT_EQ(load_master_key(std::nullopt).reveal(), key_from(8).reveal());
}

TEST(MasterKey, NoSourceIsAnError) {
    KeyEnv guard;
    EXPECT_EQ(key_error(std::nullopt),
              "no master key: set store.master_key_file, VAULTGATE_MASTER_KEY, or a systemd credential named master-key");
    // A credentials directory without master-key is the same as none.
    const TempDir dir;
    guard.credentials.set(dir.path());
    EXPECT_NE(key_error(std::nullopt).find("no master key"), std::string::npos);
}

// --- small primitives ---------------------------------------------------------------

TEST(Fingerprint, StableKeyedAndOpaque) {
    const auto f = credential_fingerprint(key_from(1), real_secret);
    EXPECT_EQ(f, credential_fingerprint(key_from(1), real_secret));
    EXPECT_EQ(f, credential_fingerprint(Secret(std::string(key_from(1).reveal())), std::string(real_secret)));
    ASSERT_EQ(f.size(), std::string("hmac-sha256:").size() + 16);
    EXPECT_TRUE(f.starts_with("hmac-sha256:"));
    EXPECT_EQ(f.substr(12).find_first_not_of("0123456789abcdef"), std::string::npos) << f;
    EXPECT_NE(f, credential_fingerprint(key_from(1), real_secret + "x"));
    EXPECT_NE(f, credential_fingerprint(key_from(2), real_secret));
    EXPECT_NE(credential_fingerprint(key_from(1), ""), credential_fingerprint(key_from(1), " "));
    EXPECT_EQ(f.find("sk_live"), std::string::npos);
    // Not a plain digest of the value.
    EXPECT_EQ(token_digest(real_secret).find(f.substr(12)), std::string::npos);
    EXPECT_THROW(credential_fingerprint(Secret("short"), "x"), StoreError);
}

TEST(TokenDigest, IsHexSha256) {
    EXPECT_EQ(token_digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(token_digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(ConstantTimeEqual, ComparesBytes) {
    EXPECT_TRUE(constant_time_equal("", ""));
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "ab"));
    EXPECT_FALSE(constant_time_equal("", "a"));
    EXPECT_TRUE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0b", 3)));
    EXPECT_FALSE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

TEST(RandomId, PrefixAndAlphabet) {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto id = random_id("vlt_");
        ASSERT_EQ(id.size(), 24u);
        EXPECT_TRUE(id.starts_with("vlt_"));
        EXPECT_EQ(id.substr(4).find_first_not_of("abcdefghijklmnopqrstuvwxyz234567"), std::string::npos) << id;
        seen.insert(id);
    }
    EXPECT_EQ(seen.size(), 200u);
    EXPECT_TRUE(random_id("ses_").starts_with("ses_"));
}

TEST(RandomToken, Base64UrlOf32Bytes) {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto t = random_token();
        ASSERT_EQ(t.size(), 43u);
        EXPECT_EQ(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                  std::string::npos)
            << t;
        seen.insert(t);
    }
    EXPECT_EQ(seen.size(), 200u);
}

}  // namespace
}  // namespace vaultgate
