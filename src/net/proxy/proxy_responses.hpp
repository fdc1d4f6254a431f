#pragma once
// Responses the proxy writes itself. Bodies are fixed text or JSON built from
// normalised values only: nothing from the request's bytes is echoed.
#include "vaultgate/egress/host.hpp"
#include "vaultgate/egress/policy.hpp"
#include "vaultgate/state/request_plan.hpp"

#include <string>
#include <string_view>

namespace vaultgate::net {

// A complete HTTP/1.1 response with a JSON error body {"error":{"code","message"}}.
std::string error_response(int status, std::string_view code, std::string_view message, bool close);

// 403 {"error":"egress_denied","reason":..., "message":...} with X-Vaultgate-Reason.
std::string denied_response(DenyReason reason, const Authority& dest);

// 407 with Proxy-Authenticate: Basic realm="vaultgate".
std::string proxy_auth_required_response();

// The HTTP/1.1 reply to a refusal made for a request to `dest`.
std::string refusal_response(const Refusal& refusal, const Authority& dest);

std::string_view status_text(int status);

}  // namespace vaultgate::net
