#include "vaultgate/crypto/digest.hpp"

#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/key_derivation.hpp"
#include "vaultgate/crypto/openssl_owned.hpp"
#include "vaultgate/util/encoding.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <stdexcept>

namespace vaultgate {

namespace {

using MacPtr = Owned<EVP_MAC, EVP_MAC_free>;
using MacCtxPtr = Owned<EVP_MAC_CTX, EVP_MAC_CTX_free>;

constexpr std::string_view fingerprint_key_info = "vaultgate fingerprint v1";

std::string hex(const unsigned char* p, std::size_t n) {
    return hex_encode(std::string_view(reinterpret_cast<const char*>(p), n), /*upper_hex=*/false);
}

}  // namespace

std::string credential_fingerprint(const Secret& master_key, std::string_view value) {
    require_master_key_size(master_key);
    DerivedKey key;
    derive_key(master_key.reveal(), fingerprint_key_info, key);
    MacPtr mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
    if (!mac) throw CryptoError("HMAC is not available: " + openssl_errors());
    MacCtxPtr ctx(EVP_MAC_CTX_new(mac.get()));
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    unsigned char out[EVP_MAX_MD_SIZE];
    std::size_t out_len = 0;
    if (!ctx || EVP_MAC_init(ctx.get(), key.bytes.data(), key.bytes.size(), params) != 1 ||
        EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(value.data()), value.size()) != 1 ||
        EVP_MAC_final(ctx.get(), out, &out_len, sizeof out) != 1 || out_len < 8)
        throw CryptoError("HMAC failed: " + openssl_errors());
    // 64 bits tell versions apart; the full MAC would add nothing for that.
    return "hmac-sha256:" + hex(out, 8);
}

std::string token_digest(std::string_view token) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed: " + openssl_errors());
    return hex(md, len);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    if (a.empty()) return true;
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace vaultgate
