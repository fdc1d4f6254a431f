#pragma once
// Random bytes, ids and tokens from OpenSSL's generator.
#include <cstddef>
#include <string>
#include <string_view>

namespace vaultgate {

// Fills `out` with n random bytes; std::runtime_error if the generator fails.
void random_bytes(unsigned char* out, std::size_t n);

// prefix + 20 random base32 characters (100 bits), e.g. "vlt_k3q...".
std::string random_id(std::string_view prefix);

// 32 random bytes, base64url without padding (43 characters).
std::string random_token();

}  // namespace vaultgate
