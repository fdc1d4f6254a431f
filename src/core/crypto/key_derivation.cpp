#include "vaultgate/crypto/key_derivation.hpp"

#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/openssl_owned.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <string>

namespace vaultgate {

namespace {

using KdfPtr = Owned<EVP_KDF, EVP_KDF_free>;
using KdfCtxPtr = Owned<EVP_KDF_CTX, EVP_KDF_CTX_free>;

}  // namespace

DerivedKey::~DerivedKey() { OPENSSL_cleanse(bytes.data(), bytes.size()); }

void derive_key(std::string_view master, std::string_view info, DerivedKey& out) {
    KdfPtr kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr));
    if (!kdf) throw CryptoError("HKDF is not available: " + openssl_errors());
    KdfCtxPtr ctx(EVP_KDF_CTX_new(kdf.get()));
    if (!ctx) throw CryptoError("cannot create an HKDF context: " + openssl_errors());
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(master.data()), master.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()), info.size()),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_KDF_derive(ctx.get(), out.bytes.data(), out.bytes.size(), params) != 1)
        throw CryptoError("key derivation failed: " + openssl_errors());
}

void require_master_key_size(const Secret& master_key) {
    if (master_key.size() != master_key_size)
        throw CryptoError("the master key must be " + std::to_string(master_key_size) + " bytes, got " +
                          std::to_string(master_key.size()));
}

}  // namespace vaultgate
