#pragma once
// RS256 JSON Web Tokens (RFC 7515, 7519): what github-app and jwt-bearer sign
// to buy a token. The JWT is itself a credential while it lives, so it is a Secret.
#include "vaultgate/minting/mint_error.hpp"
#include "vaultgate/util/secret.hpp"

#include <nlohmann/json_fwd.hpp>
#include <string_view>

namespace vaultgate::minting {

// base64url(header).base64url(claims).base64url(signature), no padding; the
// header is {"alg":"RS256","typ":"JWT"}, plus "kid" when key_id is not empty.
// The key is an unencrypted RSA private key in PEM, PKCS#1 ("BEGIN RSA PRIVATE
// KEY") or PKCS#8 ("BEGIN PRIVATE KEY"), also on one line with each line break
// written as the two characters "\n" (how a credential value holds it). Throws
// MintError for a key that is not one (or is under 2048 bits); the message
// holds no key material.
Secret sign_rs256_jwt(const nlohmann::json& claims, const Secret& pem_private_key, std::string_view key_id = {});

// Throws the MintError sign_rs256_jwt would for this key, for checking a
// configured key before its first use.
void check_rs256_key(const Secret& pem_private_key);

}  // namespace vaultgate::minting
