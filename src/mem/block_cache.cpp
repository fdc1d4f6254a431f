#include "vaultgate/mem/block_cache.hpp"

#include <openssl/crypto.h>

#include <malloc.h>
#include <string.h>  // explicit_bzero

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A held block is poisoned, so a use after free is still reported while the
// block waits for its next owner.
#define VAULTGATE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define VAULTGATE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define VAULTGATE_POISON(p, n) ((void)(p), (void)(n))
#define VAULTGATE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace vaultgate::block_cache {

namespace {

struct HeldBlock {
    void* block;
    std::size_t usable;
    clock::time_point since;
};

// Trivially destructible on purpose: OpenSSL frees its per-thread state after
// C++ thread_local destructors have run, and those frees must still find a
// valid (by then disabled) cache.
struct ThreadCache {
    bool enabled;
    std::size_t count;
    std::size_t bytes;
    std::uint64_t reused;
    bool freeing_directly;         // inside a FreeDirectly
    std::uint64_t freed_directly;  // blocks freed in it so far
    HeldBlock held[max_blocks];
};

thread_local ThreadCache cache;

bool openssl_routed = false;

// Summed over threads, for /metrics.
std::atomic<std::size_t> held_everywhere{0};
// Blocks handed back to free() outside the per-request path (trim, and
// FreeDirectly scopes), for the malloc_trim schedule.
std::atomic<std::uint64_t> freed_everywhere{0};

// A block serves a request of `bytes` when it is large enough and wastes at
// most a quarter plus a page: a handshake's 5 KiB must not pin a 64 KiB buffer.
bool fits(std::size_t usable, std::size_t bytes) { return usable >= bytes && usable - bytes <= bytes / 4 + 4096; }

void drop(std::size_t index) {
    HeldBlock& h = cache.held[index];
    VAULTGATE_UNPOISON(h.block, h.usable);
    std::free(h.block);
    cache.bytes -= h.usable;
    held_everywhere.fetch_sub(h.usable, std::memory_order_relaxed);
    freed_everywhere.fetch_add(1, std::memory_order_relaxed);
    h = cache.held[--cache.count];
}

void* take_held(std::size_t bytes) {
    std::size_t best = cache.count;
    for (std::size_t i = 0; i < cache.count; ++i) {
        const std::size_t usable = cache.held[i].usable;
        if (fits(usable, bytes) && (best == cache.count || usable < cache.held[best].usable)) best = i;
    }
    if (best == cache.count) return nullptr;
    HeldBlock h = cache.held[best];
    cache.bytes -= h.usable;
    held_everywhere.fetch_sub(h.usable, std::memory_order_relaxed);
    cache.held[best] = cache.held[--cache.count];
    ++cache.reused;
    VAULTGATE_UNPOISON(h.block, h.usable);
    return h.block;
}

void* openssl_malloc(std::size_t bytes, const char*, int) { return allocate(bytes); }
void* openssl_realloc(void* block, std::size_t bytes, const char*, int) { return reallocate(block, bytes); }
void openssl_free(void* block, const char*, int) { release(block); }

}  // namespace

void enable_on_this_thread() { cache.enabled = true; }

void disable_on_this_thread() {
    cache.enabled = false;
    while (cache.count > 0) drop(cache.count - 1);
}

FreeDirectly::FreeDirectly() : was_enabled_(cache.enabled), was_freeing_directly_(cache.freeing_directly) {
    cache.enabled = false;
    cache.freeing_directly = true;
}

FreeDirectly::~FreeDirectly() {
    cache.enabled = was_enabled_;
    cache.freeing_directly = was_freeing_directly_;
    // One shared counter update per scope, not per free.
    if (!was_freeing_directly_ && cache.freed_directly > 0) {
        freed_everywhere.fetch_add(cache.freed_directly, std::memory_order_relaxed);
        cache.freed_directly = 0;
    }
}

void* allocate(std::size_t bytes) {
    if (cache.enabled && bytes >= min_block_bytes && cache.count > 0) {
        if (void* block = take_held(bytes)) return block;
    }
    return std::malloc(bytes);
}

void release(void* block) {
    if (!block) return;
    if (cache.enabled) {
        const std::size_t usable = malloc_usable_size(block);
        if (usable >= min_block_bytes && cache.count < max_blocks && cache.bytes + usable <= max_bytes) {
            // The next owner is another connection: it must not find this
            // one's decrypted traffic or Proxy-Authorization in its buffer.
            explicit_bzero(block, usable);
            VAULTGATE_POISON(block, usable);
            cache.held[cache.count++] = HeldBlock{block, usable, clock::now()};
            cache.bytes += usable;
            held_everywhere.fetch_add(usable, std::memory_order_relaxed);
            return;
        }
    }
    if (cache.freeing_directly) ++cache.freed_directly;
    std::free(block);
}

void* reallocate(void* block, std::size_t bytes) {
    if (!block) return allocate(bytes);
    if (bytes == 0) {
        release(block);
        return nullptr;
    }
    const std::size_t usable = malloc_usable_size(block);
    if (!cache.enabled || (usable < min_block_bytes && bytes < min_block_bytes)) return std::realloc(block, bytes);
    // Growing or shrinking by more than half moves the data; anything else
    // stays where it is.
    if (bytes <= usable && bytes >= usable / 2) return block;
    void* moved = allocate(bytes);
    if (!moved) return nullptr;
    std::memcpy(moved, block, std::min(usable, bytes));
    release(block);
    return moved;
}

void trim(clock::time_point cutoff) {
    for (std::size_t i = cache.count; i-- > 0;) {
        if (cache.held[i].since < cutoff) drop(i);
    }
}

Stats stats() { return Stats{cache.count, cache.bytes, cache.reused}; }

std::size_t bytes_held_by_all_threads() { return held_everywhere.load(std::memory_order_relaxed); }

std::uint64_t blocks_freed_by_all_threads() { return freed_everywhere.load(std::memory_order_relaxed); }

bool route_openssl_allocations() {
    // A second call would be refused (OpenSSL has allocated by then) but
    // changes nothing: the first one's routing stays.
    if (!openssl_routed) openssl_routed = CRYPTO_set_mem_functions(openssl_malloc, openssl_realloc, openssl_free) == 1;
    return openssl_routed;
}

bool openssl_allocations_routed() { return openssl_routed; }

}  // namespace vaultgate::block_cache
