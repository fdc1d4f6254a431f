#pragma once
// Responses the proxy writes itself. Bodies are fixed text or JSON built from
// normalised values only: nothing from the request's bytes is echoed.
#include "vaultgate/egress/host.hpp"
#include "vaultgate/egress/policy.hpp"
#include "vaultgate/state/request_plan.hpp"

#include <string>
#include <string_view>

namespace vaultgate::net {

// A complete HTTP/1.1 response with a JSON error body {"error":{"code","message"}};
// with a `reason`, an X-Vaultgate-Reason field names it too.
std::string error_response(int status, std::string_view code, std::string_view message, bool close,
                           std::string_view reason = {});

// 403 {"error":"egress_denied","reason":..., "message":...} with X-Vaultgate-Reason.
// With `policy` (a config policy's name, or "inline"), the body also has
// "policy" and, for a refusal by one of its keys, "rule"; the message names both.
std::string denied_response(DenyReason reason, const Authority& dest, std::string_view policy = {});

// 407 with Proxy-Authenticate: Basic realm="vaultgate".
std::string proxy_auth_required_response(std::string_view message);

// The HTTP/1.1 reply to a refusal made for a request to `dest`.
std::string refusal_response(const Refusal& refusal, const Authority& dest);

std::string_view status_text(int status);

}  // namespace vaultgate::net
