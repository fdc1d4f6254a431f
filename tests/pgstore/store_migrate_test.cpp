// `vaultgate store migrate`, the real binary: a file store copied into a
// real PostgreSQL, field by field, and never over data already there.
#include "../core/vault/store_fixtures.hpp"
#include "pg_server.hpp"
#include "serve_process.hpp"
#include "temp_dir.hpp"
#include "vaultgate/pgstore/pg_store.hpp"

#include <gtest/gtest.h>

namespace vaultgate::test {
namespace {

using namespace store_test;

TEST(StoreMigrate, CopiesAFileStoreIntoAnEmptyDatabase) {
    VAULTGATE_START_PG(pg);
    TempDir dir;
    const Secret key = key_from('m');
    const std::string key_file = dir.write("master.key", std::string(key.reveal()));
    const std::string store_path = dir.file("vaultgate.db");
    const StoreData data = sample_data();
    open_file_store(store_path, key)->save(data);

    const std::vector<std::string> argv{VAULTGATE_BINARY, "store",   "migrate",           "--from", store_path,
                                        "--to",           pg->url(), "--master-key-file", key_file};
    const auto done = run_command(argv);
    ASSERT_EQ(done.exit_code, 0) << done.err;
    EXPECT_EQ(done.out, "copied 2 vaults, 3 credentials, 5 services and 2 sessions into the database\n");

    StoreData copied = open_pg_store(pg->url(), key)->load();
    EXPECT_GT(copied.generation, 0u);
    copied.generation = data.generation;  // the database counts its own versions
    EXPECT_TRUE(same_data(data, copied));
    const auto sealed = pg->psql("SELECT sealed_value FROM vaultgate_credentials");
    EXPECT_EQ(sealed.find(real_secret), std::string::npos) << sealed;

    // Never over data already there.
    const auto again = run_command(argv);
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.err.find("already holds vaults or sessions"), std::string::npos) << again.err;

    // No password on the command line.
    auto with_password = argv;
    with_password[6] = "postgresql://vaultgate:hunter2@127.0.0.1/postgres";
    const auto refused = run_command(with_password);
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("holds a password"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.err.find("hunter2"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace vaultgate::test
