#include "aes_gcm.hpp"

#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/openssl_owned.hpp"

#include <openssl/evp.h>

namespace vaultgate {

namespace {

using CipherCtxPtr = Owned<EVP_CIPHER_CTX, EVP_CIPHER_CTX_free>;

}  // namespace

bool gcm_seal(const DerivedKey& key, const unsigned char* nonce, const GcmInput& in, unsigned char* out,
              unsigned char* tag) {
    CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
    int n = 0;
    return ctx && EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(gcm_nonce_size), nullptr) == 1 &&
           EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key.bytes.data(), nonce) == 1 &&
           EVP_EncryptUpdate(ctx.get(), nullptr, &n, in.aad, static_cast<int>(in.aad_size)) == 1 &&
           EVP_EncryptUpdate(ctx.get(), out, &n, in.data, static_cast<int>(in.data_size)) == 1 &&
           static_cast<std::size_t>(n) == in.data_size && EVP_EncryptFinal_ex(ctx.get(), out + n, &n) == 1 && n == 0 &&
           EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(gcm_tag_size), tag) == 1;
}

bool gcm_open(const DerivedKey& key, const unsigned char* nonce, const GcmInput& in, const unsigned char* tag,
              unsigned char* out) {
    CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
    int n = 0;
    const bool ok =
        ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(gcm_nonce_size), nullptr) == 1 &&
        EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, key.bytes.data(), nonce) == 1 &&
        EVP_DecryptUpdate(ctx.get(), nullptr, &n, in.aad, static_cast<int>(in.aad_size)) == 1 &&
        EVP_DecryptUpdate(ctx.get(), out, &n, in.data, static_cast<int>(in.data_size)) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(gcm_tag_size),
                            const_cast<unsigned char*>(tag)) == 1 &&
        // GCM only knows whether the data is intact at the end.
        EVP_DecryptFinal_ex(ctx.get(), out + n, &n) == 1;
    if (!ok) openssl_errors();  // drained
    return ok;
}

}  // namespace vaultgate
