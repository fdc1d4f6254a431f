#pragma once
// Keys derived from the master key with HKDF-SHA256, one distinct `info` per
// use, so the master key itself keys nothing and one derived key says nothing
// about another.
#include "vaultgate/util/secret.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string_view>

namespace vaultgate {

// A key primitive failed or was given a key of the wrong size. The message
// never holds key bytes.
class CryptoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

inline constexpr std::size_t master_key_size = 32;
inline constexpr std::size_t derived_key_size = 32;

// 32 bytes, wiped when the key goes out of scope.
struct DerivedKey {
    std::array<unsigned char, derived_key_size> bytes{};
    DerivedKey() = default;
    DerivedKey(const DerivedKey&) = delete;
    DerivedKey& operator=(const DerivedKey&) = delete;
    ~DerivedKey();
};

// HKDF-SHA256 of `master` with `info`. Throws CryptoError.
void derive_key(std::string_view master, std::string_view info, DerivedKey& out);

// Throws CryptoError unless the master key is master_key_size bytes.
void require_master_key_size(const Secret& master_key);

}  // namespace vaultgate
