#pragma once
// unique_ptr owners for OpenSSL objects: Owned<EVP_MAC, EVP_MAC_free> frees
// with the object's own free function. Private to src/core.
#include <memory>

namespace vaultgate {

template <class T, void (*Free)(T*)>
struct Freer {
    void operator()(T* p) const noexcept { Free(p); }
};
template <class T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, Freer<T, Free>>;

}  // namespace vaultgate
