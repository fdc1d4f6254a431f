// The generation record beside the store: an older copy of the store put
// back on its own is refused, and the record follows every load and save.
#include "store_fixtures.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace vaultgate {
namespace {

using namespace store_test;
using test::TempDir;

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
    EXPECT_EQ(names, (std::set<std::string>{"s.db", "s.db.journal", "s.db.generation"}));
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

}  // namespace
}  // namespace vaultgate
