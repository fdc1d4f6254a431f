#include "vaultgate/crypto/ids.hpp"

#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/util/encoding.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace vaultgate {

void random_bytes(unsigned char* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1)
        throw std::runtime_error("random number generator failed: " + openssl_errors());
}

std::string random_id(std::string_view prefix) {
    static constexpr std::string_view base32 = "abcdefghijklmnopqrstuvwxyz234567";
    std::array<unsigned char, 20> bytes{};
    random_bytes(bytes.data(), bytes.size());
    std::string out(prefix);
    // 256 is a multiple of 32, so masking keeps every character equally likely.
    for (auto b : bytes) out += base32[b & 31];
    return out;
}

std::string random_token() {
    std::array<unsigned char, 32> bytes{};
    random_bytes(bytes.data(), bytes.size());
    std::string token = base64_encode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                      Base64Alphabet::url, false);
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return token;
}

}  // namespace vaultgate
