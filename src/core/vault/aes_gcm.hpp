#pragma once
// AES-256-GCM with a 12-byte nonce and a 16-byte tag, the one cipher of the
// stores: the file store's payload and the database store's credential values.
#include "vaultgate/crypto/key_derivation.hpp"

#include <cstddef>

namespace vaultgate {

inline constexpr std::size_t gcm_nonce_size = 12;
inline constexpr std::size_t gcm_tag_size = 16;

struct GcmInput {
    const unsigned char* aad = nullptr;  // authenticated, not encrypted
    std::size_t aad_size = 0;
    const unsigned char* data = nullptr;
    std::size_t data_size = 0;  // below 2 GiB
};

// Encrypts `in.data` into `out` (data_size bytes) and writes the tag. False on
// an OpenSSL failure (its error queue holds why).
bool gcm_seal(const DerivedKey& key, const unsigned char* nonce, const GcmInput& in, unsigned char* out,
              unsigned char* tag);

// Decrypts `in.data` into `out`; false when the tag does not match (wrong
// key, altered data) or OpenSSL fails. The error queue is left empty: it says
// no more than "bad tag".
bool gcm_open(const DerivedKey& key, const unsigned char* nonce, const GcmInput& in, const unsigned char* tag,
              unsigned char* out);

}  // namespace vaultgate
