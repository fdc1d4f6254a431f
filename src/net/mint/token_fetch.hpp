#pragma once
// One visit to a token endpoint for a minted binding: the request its auth type
// makes (vaultgate/minting), sent with the outbound HTTPS client, and the
// answer read. A failure is a short code for the access log and a detail for
// the diagnostic log, neither holding a byte of the endpoint's answer.
#include "net/upstream/https_client.hpp"
#include "vaultgate/minting/token_response.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace vaultgate::net {

// The access log's reasons for a token that could not be had.
namespace token_reason {
inline constexpr std::string_view status = "token_endpoint_status";  // any answer but the expected status
inline constexpr std::string_view missing = "token_missing";         // the expected status without a usable token
inline constexpr std::string_view timeout = "token_endpoint_timeout";
inline constexpr std::string_view too_large = "token_endpoint_too_large";  // an answer over 1 MiB
inline constexpr std::string_view unreachable = "token_endpoint_unreachable";
inline constexpr std::string_view refused = "token_endpoint_refused";  // the address rules
inline constexpr std::string_view tls = "token_endpoint_tls";
inline constexpr std::string_view protocol = "token_endpoint_protocol";
inline constexpr std::string_view bad_input = "token_input_invalid";  // a key or URL minting cannot use
inline constexpr std::string_view unusable = "token_unusable";        // a token that cannot be redacted
inline constexpr std::string_view backoff = "token_backoff";          // refused without a fetch after a failure
}  // namespace token_reason

struct FetchOutcome {
    std::optional<minting::MintedToken> token;  // set on success
    std::string_view reason;                    // a token_reason on failure
    std::string detail;                         // names and fixed text only
};

// Mints the token of `binding` (a minted auth type whose credentials are all
// in the vault). Never throws for what the endpoint or the inputs do.
awaitable<FetchOutcome> fetch_token(Runtime& rt, const Binding& binding, const HttpsLimits& limits);

}  // namespace vaultgate::net
