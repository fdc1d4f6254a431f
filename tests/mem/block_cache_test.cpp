#include "vaultgate/mem/block_cache.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace vaultgate::block_cache {
namespace {

// As in vaultgate's main(): before any static initialiser can reach OpenSSL.
[[gnu::constructor(101)]] void route_for_these_tests() { route_openssl_allocations(); }

// Each test runs with the cache enabled on its thread and leaves it empty.
class BlockCacheTest : public ::testing::Test {
protected:
    void SetUp() override { enable_on_this_thread(); }
    void TearDown() override { disable_on_this_thread(); }
};

TEST_F(BlockCacheTest, AKeptBlockIsWipedBeforeItsNextOwnerGetsIt) {
    auto* first = static_cast<char*>(allocate(16 * 1024));
    std::memset(first, 's', 16 * 1024);
    release(first);
    auto* second = static_cast<char*>(allocate(16 * 1024));
    ASSERT_EQ(second, first);
    EXPECT_EQ(std::string(second, 16 * 1024), std::string(16 * 1024, '\0'));
    release(second);
}

TEST_F(BlockCacheTest, AReleasedBlockServesTheNextAllocationOfAboutItsSize) {
    void* first = allocate(64 * 1024);
    release(first);
    EXPECT_EQ(stats().blocks, 1u);
    const auto reused_before = stats().reused;
    void* second = allocate(64 * 1024 - 100);
    EXPECT_EQ(second, first);
    EXPECT_EQ(stats().blocks, 0u);
    EXPECT_EQ(stats().reused, reused_before + 1);
    release(second);
}

TEST_F(BlockCacheTest, ASmallerRequestDoesNotTakeAMuchLargerBlock) {
    void* large = allocate(64 * 1024);
    release(large);
    void* small = allocate(8 * 1024);
    EXPECT_NE(small, large);
    EXPECT_EQ(stats().blocks, 1u);  // the large one still waits
    release(small);
}

TEST_F(BlockCacheTest, ALargerRequestDoesNotTakeASmallerBlock) {
    void* block = allocate(16 * 1024);
    release(block);
    void* larger = allocate(32 * 1024);
    EXPECT_EQ(stats().blocks, 1u);
    std::memset(larger, 0xab, 32 * 1024);  // the whole size is usable (ASan checks)
    release(larger);
}

TEST_F(BlockCacheTest, SmallBlocksAreFreedAtOnce) {
    release(allocate(100));
    release(allocate(min_block_bytes - 64));
    EXPECT_EQ(stats().blocks, 0u);
}

TEST_F(BlockCacheTest, AtMostMaxBlocksAreHeld) {
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < max_blocks + 8; ++i) blocks.push_back(allocate(8 * 1024));
    for (void* b : blocks) release(b);
    EXPECT_EQ(stats().blocks, max_blocks);
}

TEST_F(BlockCacheTest, AtMostMaxBytesAreHeld) {
    std::vector<void*> blocks;
    for (int i = 0; i < 20; ++i) blocks.push_back(allocate(128 * 1024));
    for (void* b : blocks) release(b);
    // Held until the next one would not fit.
    EXPECT_LE(stats().bytes, max_bytes);
    EXPECT_GT(stats().bytes + 128 * 1024 + 4096, max_bytes);
    EXPECT_LT(stats().blocks, 20u);
}

TEST_F(BlockCacheTest, TrimFreesOnlyBlocksHeldSinceBeforeTheCutoff) {
    release(allocate(16 * 1024));
    const auto after_first = clock::now();
    EXPECT_EQ(stats().blocks, 1u);
    trim(after_first - std::chrono::seconds(1));
    EXPECT_EQ(stats().blocks, 1u);
    trim(after_first + std::chrono::milliseconds(1));
    EXPECT_EQ(stats().blocks, 0u);
    EXPECT_EQ(stats().bytes, 0u);
}

TEST_F(BlockCacheTest, DisablingFreesEverythingAndLaterReleasesGoStraightToFree) {
    release(allocate(16 * 1024));
    release(allocate(32 * 1024));
    disable_on_this_thread();
    EXPECT_EQ(stats().blocks, 0u);
    release(allocate(16 * 1024));
    EXPECT_EQ(stats().blocks, 0u);
    enable_on_this_thread();
}

TEST_F(BlockCacheTest, WhileAFreeDirectlyExistsNothingIsKeptAndNothingReused) {
    void* kept = allocate(16 * 1024);
    release(kept);
    ASSERT_EQ(stats().blocks, 1u);
    {
        FreeDirectly quiet;
        void* other = allocate(16 * 1024);
        EXPECT_NE(other, kept);  // the held block is not handed out
        release(other);
        EXPECT_EQ(stats().blocks, 1u);
    }
    release(allocate(32 * 1024));  // enabled again afterwards
    EXPECT_EQ(stats().blocks, 2u);
}

TEST_F(BlockCacheTest, AThreadThatDidNotEnableItKeepsNothing) {
    Stats seen;
    std::thread other([&seen] {
        release(allocate(64 * 1024));
        seen = stats();
    });
    other.join();
    EXPECT_EQ(seen.blocks, 0u);
}

TEST_F(BlockCacheTest, AMemoryBlockFreedOnAnotherThreadIsKeptThere) {
    void* block = allocate(64 * 1024);
    Stats seen;
    std::thread other([&seen, block] {
        enable_on_this_thread();
        release(block);
        seen = stats();
        disable_on_this_thread();
    });
    other.join();
    EXPECT_EQ(seen.blocks, 1u);
    EXPECT_EQ(stats().blocks, 0u);
}

TEST_F(BlockCacheTest, ReallocateKeepsTheContentAndMovesOnlyWhenItMust) {
    auto* p = static_cast<char*>(reallocate(nullptr, 6000));
    ASSERT_NE(p, nullptr);
    std::memset(p, 'x', 6000);
    // Shrinking by less than half stays in place.
    EXPECT_EQ(reallocate(p, 5000), p);
    auto* grown = static_cast<char*>(reallocate(p, 64 * 1024));
    ASSERT_NE(grown, nullptr);
    EXPECT_EQ(std::string(grown, 5000), std::string(5000, 'x'));
    std::memset(grown, 'y', 64 * 1024);
    EXPECT_EQ(stats().blocks, 1u);  // the 6000-byte block, kept
    EXPECT_EQ(reallocate(grown, 0), nullptr);
    EXPECT_EQ(stats().blocks, 2u);
}

TEST_F(BlockCacheTest, ReallocateOfSmallBlocksIsPlainRealloc) {
    const auto before = stats();
    auto* p = static_cast<char*>(reallocate(nullptr, 100));
    std::memset(p, 'z', 100);
    p = static_cast<char*>(reallocate(p, 1000));
    EXPECT_EQ(std::string(p, 100), std::string(100, 'z'));
    release(p);
    EXPECT_EQ(stats().blocks, before.blocks);  // nothing kept
    EXPECT_EQ(stats().reused, before.reused);  // nothing taken
}

#if defined(__SANITIZE_ADDRESS__)
TEST_F(BlockCacheTest, AHeldBlockIsPoisonedSoAUseAfterReleaseIsReported) {
    auto* block = static_cast<char*>(allocate(16 * 1024));
    release(block);
    ASSERT_EQ(stats().blocks, 1u);
    EXPECT_DEATH(block[100] = 'x', "use-after-poison");
}
#endif

TEST_F(BlockCacheTest, OpenSslObjectsComeFromTheCache) {
    ASSERT_TRUE(openssl_allocations_routed());
    EXPECT_TRUE(route_openssl_allocations());  // again, long after OpenSSL's first allocation
    EXPECT_TRUE(openssl_allocations_routed());
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    ASSERT_NE(ctx, nullptr);
    // An SSL object is several KiB in OpenSSL 3.0 (8.6): freeing it leaves a
    // block, and the next SSL object is built in it.
    SSL_free(SSL_new(ctx));
    ASSERT_GE(stats().blocks, 1u);
    const auto reused_before = stats().reused;
    SSL* second = SSL_new(ctx);
    EXPECT_GT(stats().reused, reused_before);
    SSL_free(second);
    SSL_CTX_free(ctx);
}

}  // namespace
}  // namespace vaultgate::block_cache
