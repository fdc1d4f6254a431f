// The master key's sources and their order; errors name the source, never
// the key.
#include "store_fixtures.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <optional>

namespace vaultgate {
namespace {

using namespace store_test;
using test::TempDir;

// Unset for one test until set(), and put back after.
using EnvVar = test::ScopedEnv;

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

// A FIFO with no writer would hang the start; it is refused at once.
TEST(MasterKey, AFifoIsRefusedWithoutHanging) {
    const KeyEnv guard;
    const TempDir dir;
    const auto path = dir.file("key");
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    EXPECT_EQ(key_error(path), "store.master_key_file " + path + ": not a regular file");
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
    EXPECT_EQ(
        key_error(std::nullopt),
        "no master key: set store.master_key_file, VAULTGATE_MASTER_KEY, or a systemd credential named master-key");
    // A credentials directory without master-key is the same as none.
    const TempDir dir;
    guard.credentials.set(dir.path());
    EXPECT_NE(key_error(std::nullopt).find("no master key"), std::string::npos);
}

}  // namespace
}  // namespace vaultgate
