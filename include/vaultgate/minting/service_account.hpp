#pragma once
// A Google service-account JSON key, the input of jwt-bearer.
#include "vaultgate/minting/mint_error.hpp"
#include "vaultgate/util/secret.hpp"

#include <string>

namespace vaultgate::minting {

inline constexpr std::string_view google_token_uri = "https://oauth2.googleapis.com/token";

struct ServiceAccountKey {
    std::string client_email;
    Secret private_key;     // PEM, PKCS#8 as Google issues it
    std::string token_uri;  // google_token_uri when the JSON has none
    std::string key_id;     // "private_key_id", the JWT's kid; may be empty
};

// Throws MintError naming the missing or malformed field (never its value) for
// text that is not a JSON object, or lacks a string client_email or private_key,
// or holds a token_uri that is not an https URL. Every copy of the text and of
// the parsed tree is wiped.
ServiceAccountKey parse_service_account(const Secret& json_text);

}  // namespace vaultgate::minting
