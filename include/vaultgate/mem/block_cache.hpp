#pragma once
// Large heap blocks kept for reuse by the I/O thread that freed them.
//
// vaultgate gives every block of 4 KiB and more pages of its own (glibc's
// M_MMAP_THRESHOLD, set in serve.cpp), so that a burst of connections leaves
// no holes among the small objects idle connections keep. The price is paid
// per new connection: its record buffers, receive buffers and handshake
// buffer (about five blocks) each cost an mmap, page faults on first touch
// and an munmap, which with two threads also flushes the other core's TLB.
// An I/O thread therefore holds the large blocks its connections free for a
// short while and hands each to the next allocation of about the same size;
// blocks nobody asked for again are freed by trim(), so an idle gateway holds
// none. A block is wiped when it is kept: the next connection must not find
// this one's data in it.
//
// Only threads that called enable_on_this_thread() keep blocks; everywhere
// else allocate/release/reallocate are malloc/free/realloc. The blocks are
// plain malloc blocks either way, so memory may be freed by another thread
// than the one that allocated it.
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace vaultgate::block_cache {

using clock = std::chrono::steady_clock;

// Smaller blocks come from the heap's free lists and are not kept.
constexpr std::size_t min_block_bytes = 4096;
// Per thread: a few connections' worth of buffers.
constexpr std::size_t max_blocks = 32;
constexpr std::size_t max_bytes = 1024 * 1024;
// What trim() callers pass: a block not reused for this long is freed.
constexpr clock::duration idle_before_freed = std::chrono::milliseconds(500);

void enable_on_this_thread();
// Frees what this thread holds; later frees go straight to free().
void disable_on_this_thread();

// malloc/free/realloc with reuse on enabled threads.
void* allocate(std::size_t bytes);
void release(void* block);
void* reallocate(void* block, std::size_t bytes);

// While one exists, this thread frees straight to free(): for memory that a
// connection gives back because it went quiet (or a pooled connection that
// expired), which no new connection is waiting for; keeping it would only
// hold memory while the gateway idles.
class FreeDirectly {
public:
    FreeDirectly();
    ~FreeDirectly();
    FreeDirectly(const FreeDirectly&) = delete;
    FreeDirectly& operator=(const FreeDirectly&) = delete;

private:
    bool was_enabled_;
    bool was_freeing_directly_;
};

// Frees the blocks this thread has held since before `cutoff`.
void trim(clock::time_point cutoff);

struct Stats {
    std::size_t blocks = 0;    // held now
    std::size_t bytes = 0;     // held now
    std::uint64_t reused = 0;  // allocations served from the held blocks
};
// This thread's.
Stats stats();
// What every thread holds together (vaultgate_block_cache_bytes in /metrics).
std::size_t bytes_held_by_all_threads();
// How many blocks trim(), disable_on_this_thread() and FreeDirectly scopes
// have handed back to free(), on every thread together (monotonic): what the
// malloc_trim schedule asks "was anything freed since the last trim".
std::uint64_t blocks_freed_by_all_threads();

// Routes OpenSSL's allocations through allocate/release/reallocate. Works
// only before OpenSSL's first allocation (main() calls it from a constructor
// that runs before static initialisers); false when too late.
bool route_openssl_allocations();
// Whether an earlier route_openssl_allocations() succeeded.
bool openssl_allocations_routed();

}  // namespace vaultgate::block_cache
