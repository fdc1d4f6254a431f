#include "vaultgate/util/secret.hpp"

#include <openssl/crypto.h>

namespace vaultgate {

void wipe_string(std::string& s) noexcept {
    // Cleanse the whole capacity: a shorter value may have left older bytes behind.
    if (s.capacity() > 0) OPENSSL_cleanse(s.data(), s.capacity());
    s.clear();
}

// Copy, then wipe the argument: moving a short string leaves its bytes behind
// in the source's inline buffer.
Secret::Secret(std::string value) : value_(value) { wipe_string(value); }
Secret::Secret(const Secret& other) : value_(other.value_) {}

Secret& Secret::operator=(const Secret& other) {
    if (this != &other) {
        wipe();
        value_ = other.value_;
    }
    return *this;
}

// Moving a std::string may leave the bytes in the moved-from SSO buffer; copy
// then wipe the source so no stray copy survives.
Secret::Secret(Secret&& other) noexcept : value_(other.value_) { other.wipe(); }

Secret& Secret::operator=(Secret&& other) noexcept {
    if (this != &other) {
        wipe();
        value_ = other.value_;
        other.wipe();
    }
    return *this;
}

Secret::~Secret() { wipe(); }

void Secret::wipe() noexcept { wipe_string(value_); }

}  // namespace vaultgate
