#pragma once
// A credential value sealed for a store that keeps values one by one (the
// database store): AES-256-GCM under a key derived from the master key, bound
// to the place it is kept in (its vault and name) as additional data, so a
// value copied to another row does not open. No Asio here.
#include "vaultgate/crypto/key_derivation.hpp"
#include "vaultgate/util/secret.hpp"

#include <string>
#include <string_view>

namespace vaultgate {

class ValueSealer {
public:
    // Throws StoreError when the master key is not 32 bytes.
    explicit ValueSealer(const Secret& master_key);

    // "v1." + base64(nonce | ciphertext | tag). Throws StoreError.
    std::string seal(const Secret& value, std::string_view context) const;
    // The value back. Throws StoreError (wrong master key, another context,
    // altered text); the message holds neither the text nor the value.
    Secret open(std::string_view sealed, std::string_view context) const;

private:
    DerivedKey key_;
};

}  // namespace vaultgate
