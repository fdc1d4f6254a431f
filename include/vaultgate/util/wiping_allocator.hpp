#pragma once
// An allocator that overwrites memory before it goes back to the heap: for
// containers a library fills with a secret (Beast's header fields holding a
// bearer token, a response body holding a minted one), where the container
// cannot be wiped from outside.
#include <openssl/crypto.h>

#include <cstddef>
#include <memory>

namespace vaultgate {

template <class T>
struct WipingAllocator {
    using value_type = T;

    WipingAllocator() = default;
    template <class U>
    WipingAllocator(const WipingAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
    void deallocate(T* p, std::size_t n) noexcept {
        OPENSSL_cleanse(p, n * sizeof(T));
        std::allocator<T>().deallocate(p, n);
    }

    template <class U>
    bool operator==(const WipingAllocator<U>&) const noexcept {
        return true;
    }
};

}  // namespace vaultgate
