#pragma once
// Reading a token endpoint's answer. The body has already been bounded by the
// caller. Anything but the expected status with a usable token is a failure,
// whatever the body holds, and a failure's reason never holds a byte of the body.
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <variant>

namespace vaultgate::minting {

struct MintedToken {
    Secret token;
    std::chrono::system_clock::time_point refresh_at;  // mint again from then on
};

struct TokenFailure {
    std::string reason;  // e.g. "token endpoint answered 401"; for the access log
};

using TokenResult = std::variant<MintedToken, TokenFailure>;

// A usable token: 1 to 16384 bytes, each a visible ASCII character (0x21-0x7e),
// so it goes into a header as it is (no CR, LF, space, NUL or other control byte).
bool is_usable_token(std::string_view token);

// How long a minted token is kept at most, however long the endpoint says it lives.
inline constexpr std::chrono::hours longest_token_cache{24};

// OAuth2 (client credentials, jwt-bearer): 200 with a JSON object holding a
// usable string "access_token"; "token_type", when present, is "bearer" in any
// case. "expires_in" is a number of seconds (a JSON number, its fraction
// dropped, or a string of digits, as some endpoints send): refresh_at = now +
// expires_in - min(60 s, 10% of expires_in), with expires_in capped at
// longest_token_cache. Missing or null: now + 5 min. Below one second (zero,
// negative) or anything else: a failure.
TokenResult parse_oauth_token_response(int status, const Secret& body, std::chrono::system_clock::time_point now);

// GitHub: 201 Created (nothing else) with a usable "token" and "expires_at"
// as "YYYY-MM-DDTHH:MM:SSZ". refresh_at = expires_at - 5 min, at most
// longest_token_cache after now; an expires_at within 5 min of now, past, or
// malformed is a failure.
TokenResult parse_github_token_response(int status, const Secret& body, std::chrono::system_clock::time_point now);

}  // namespace vaultgate::minting
