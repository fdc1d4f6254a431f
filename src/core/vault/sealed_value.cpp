#include "vaultgate/vault/sealed_value.hpp"

#include "aes_gcm.hpp"
#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/ids.hpp"
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

namespace vaultgate {

namespace {

constexpr std::string_view sealed_key_info = "vaultgate sealed value v1";
constexpr std::string_view sealed_prefix = "v1.";

GcmInput with_context(std::string_view context, const unsigned char* data, std::size_t size) {
    return {reinterpret_cast<const unsigned char*>(context.data()), context.size(), data, size};
}

}  // namespace

ValueSealer::ValueSealer(const Secret& master_key) {
    try {
        require_master_key_size(master_key);
        derive_key(master_key.reveal(), sealed_key_info, key_);
    } catch (const CryptoError& e) {
        throw StoreError(e.what());
    }
}

std::string ValueSealer::seal(const Secret& value, std::string_view context) const {
    const auto plain = value.reveal();
    std::string box(gcm_nonce_size + plain.size() + gcm_tag_size, '\0');
    auto* out = reinterpret_cast<unsigned char*>(box.data());
    random_bytes(out, gcm_nonce_size);
    const auto in = with_context(context, reinterpret_cast<const unsigned char*>(plain.data()), plain.size());
    if (!gcm_seal(key_, out, in, out + gcm_nonce_size, out + gcm_nonce_size + plain.size()))
        throw StoreError("sealing a credential value failed: " + openssl_errors());
    return std::string(sealed_prefix) + base64_encode(box, Base64Alphabet::standard, true);
}

Secret ValueSealer::open(std::string_view sealed, std::string_view context) const {
    if (!sealed.starts_with(sealed_prefix)) throw StoreError("a sealed credential value has an unknown format");
    const auto box = base64_decode(sealed.substr(sealed_prefix.size()));
    if (!box || box->size() < gcm_nonce_size + gcm_tag_size) throw StoreError("a sealed credential value is damaged");
    const auto* p = reinterpret_cast<const unsigned char*>(box->data());
    const std::size_t size = box->size() - gcm_nonce_size - gcm_tag_size;
    WipedBytes plain(size);
    if (!gcm_open(key_, p, with_context(context, p + gcm_nonce_size, size), p + gcm_nonce_size + size, plain.data()))
        throw StoreError("a sealed credential value does not open: wrong master key or altered data");
    return Secret(std::string(plain.view()));
}

}  // namespace vaultgate
