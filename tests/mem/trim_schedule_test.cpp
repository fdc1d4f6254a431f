#include "vaultgate/mem/trim_schedule.hpp"

#include "vaultgate/mem/block_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace vaultgate {
namespace {

TEST(TrimScheduleTest, AQuietGatewayIsNotTrimmed) {
    TrimSchedule s;
    for (int tick = 0; tick < 10; ++tick) EXPECT_FALSE(s.due({})) << tick;
}

TEST(TrimScheduleTest, TrimsOnceAfterEachFreeAndNotOnTheTicksBetween) {
    TrimSchedule s;
    EXPECT_TRUE(s.due({.connections_closed = 3}));
    // Nothing freed since: the pages that trim could give back are gone already.
    for (int tick = 0; tick < 5; ++tick) EXPECT_FALSE(s.due({.connections_closed = 3})) << tick;
    // A finished request frees its buffers.
    EXPECT_TRUE(s.due({.connections_closed = 3, .requests = 40}));
    EXPECT_FALSE(s.due({.connections_closed = 3, .requests = 40}));
    // Buffers shed by quiet connections, freed later by the block cache.
    EXPECT_TRUE(s.due({.connections_closed = 3, .requests = 40, .blocks_freed = 2}));
    EXPECT_FALSE(s.due({.connections_closed = 3, .requests = 40, .blocks_freed = 2}));
}

TEST(TrimScheduleTest, BlocksHandedBackToFreeAreCounted) {
    // Freed outside the cache's reuse: a FreeDirectly scope, and trim().
    block_cache::enable_on_this_thread();
    const std::uint64_t before = block_cache::blocks_freed_by_all_threads();
    {
        block_cache::FreeDirectly direct;
        block_cache::release(block_cache::allocate(64 * 1024));
    }
    EXPECT_EQ(block_cache::blocks_freed_by_all_threads(), before + 1);
    block_cache::release(block_cache::allocate(64 * 1024));  // kept for reuse: not freed yet
    EXPECT_EQ(block_cache::blocks_freed_by_all_threads(), before + 1);
    block_cache::trim(block_cache::clock::now() + std::chrono::seconds(1));
    EXPECT_EQ(block_cache::blocks_freed_by_all_threads(), before + 2);
    block_cache::disable_on_this_thread();
}

}  // namespace
}  // namespace vaultgate
