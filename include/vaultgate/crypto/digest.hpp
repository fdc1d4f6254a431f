#pragma once
// Digests and comparisons for what the admin API keeps and checks: credential
// fingerprints, session token digests, token comparison.
#include "vaultgate/util/secret.hpp"

#include <string>
#include <string_view>

namespace vaultgate {

// "hmac-sha256:" + 16 hex digits: HMAC-SHA256 of the value under a key derived
// from the master key. Stable across restarts, so an operator can tell whether a
// rotation changed anything, and useless for guessing the value without the key.
// Throws CryptoError (crypto/key_derivation.hpp) for a master key that is not
// 32 bytes.
std::string credential_fingerprint(const Secret& master_key, std::string_view value);

// Lower-case hex SHA-256, for session tokens at rest.
std::string token_digest(std::string_view token);

// Compares without a data-dependent early exit; only the lengths may leak.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace vaultgate
