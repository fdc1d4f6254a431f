// The connection receive buffer (src/net/read_buffer.hpp): what a read appends
// stays readable until consumed, whatever the buffer does to make room.
#include "vaultgate/mem/read_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <string>

// GCC says so with __SANITIZE_ADDRESS__, clang (before 2025) only with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#if UNDER_ASAN
// For an impossible size glibc's malloc returns null; ASan's allocator aborts
// unless told otherwise. This asks the whole unit-test binary for glibc's
// behaviour, so that the bad_alloc path below runs under ASan too (no other
// test allocates an impossible size).
extern "C" __attribute__((used, visibility("default"))) const char* __asan_default_options() {
    return "allocator_may_return_null=1";
}
#endif

namespace vaultgate::net {
namespace {

// Appends `bytes` as a socket read would: prepare, copy, commit.
void append(ReadBuffer& buffer, const std::string& bytes) {
    std::size_t room = 0;
    char* at = buffer.prepare(room);
    ASSERT_GE(room, bytes.size());
    std::memcpy(at, bytes.data(), bytes.size());
    buffer.commit(bytes.size());
}

TEST(ReadBufferTest, WhatIsReadStaysUntilConsumed) {
    ReadBuffer buffer(64);
    EXPECT_TRUE(buffer.empty());
    append(buffer, "GET / HTTP/1.1\r\n");
    append(buffer, "Host: a\r\n\r\n");
    EXPECT_EQ(buffer.view(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    buffer.consume(16);
    EXPECT_EQ(buffer.view(), "Host: a\r\n\r\n");
    buffer.consume(buffer.size());
    EXPECT_TRUE(buffer.empty());
}

TEST(ReadBufferTest, EveryPrepareOffersAtLeastAFullRead) {
    ReadBuffer buffer(100);
    for (int i = 0; i < 50; ++i) {
        std::size_t room = 0;
        buffer.prepare(room);
        EXPECT_GE(room, 100u);
        buffer.commit(37);
    }
    EXPECT_EQ(buffer.size(), 50u * 37);
}

TEST(ReadBufferTest, GrowingKeepsTheUnconsumedBytesInOrder) {
    ReadBuffer buffer(16);
    std::string expected;
    for (char c = 'a'; c <= 'z'; ++c) {
        const std::string piece(16, c);
        append(buffer, piece);
        expected += piece;
    }
    buffer.consume(5);
    EXPECT_EQ(buffer.view(), expected.substr(5));
}

TEST(ReadBufferTest, AConsumedPrefixIsReusedBeforeTheBufferGrows) {
    ReadBuffer buffer(16);
    append(buffer, std::string(16, 'x'));
    append(buffer, std::string(12, 'y') + "tail");  // grows the block to 32 bytes
    buffer.consume(28);                             // only "tail" is left, at the far end
    std::size_t room = 0;
    char* next = buffer.prepare(room);
    EXPECT_EQ(buffer.view(), "tail");  // moved to the front of the same block:
    EXPECT_EQ(room, 28u);              // growing would have offered 60
    EXPECT_EQ(next, buffer.view().data() + 4);
}

TEST(ReadBufferTest, GrowingWithAConsumedPrefixKeepsOnlyTheUnconsumedBytes) {
    ReadBuffer buffer(16);
    append(buffer, std::string(10, 'a') + "bcdef");
    buffer.consume(10);                  // "bcdef" left, 1 byte of room
    append(buffer, "ghijklmnopqrstuv");  // too little room even after moving: grows
    EXPECT_EQ(buffer.view(), "bcdefghijklmnopqrstuv");
}

TEST(ReadBufferTest, MemoryIsGivenBackOnlyWhenNothingIsLeftToConsume) {
    // On a block-cache thread the returned block is visible: it is held for reuse.
    block_cache::enable_on_this_thread();
    {
        ReadBuffer buffer(8192);
        append(buffer, "pipelined");
        buffer.release_if_empty();
        EXPECT_EQ(block_cache::stats().blocks, 0u);  // kept: bytes are waiting
        EXPECT_EQ(buffer.view(), "pipelined");
        buffer.consume(buffer.size());
        buffer.release_if_empty();
        EXPECT_EQ(block_cache::stats().blocks, 1u);  // given back
        EXPECT_TRUE(buffer.empty());
        append(buffer, "next");  // usable again afterwards
        EXPECT_EQ(buffer.view(), "next");
        EXPECT_EQ(block_cache::stats().blocks, 0u);  // the same block, taken again
    }
    block_cache::disable_on_this_thread();
}

TEST(ReadBufferTest, AFailedAllocationThrowsBadAllocAndLeavesTheBufferAsItWas) {
    // No allocator can give 2^62 bytes: the grow path must report it, not
    // hand out a null buffer to read into.
    ReadBuffer buffer(std::size_t{1} << 62);
    std::size_t room = 0;
    EXPECT_THROW(buffer.prepare(room), std::bad_alloc);
    EXPECT_TRUE(buffer.empty());
    EXPECT_THROW(buffer.prepare(room), std::bad_alloc);  // the same again, no corruption
}

}  // namespace
}  // namespace vaultgate::net
