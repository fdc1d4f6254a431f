#pragma once
// Absolute-form http:// requests on the proxy listener: allowed only when the
// session's policy has allow_http for the host; never injected.
#include "net/proxy/connection.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/mem/read_buffer.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <optional>

namespace vaultgate::net {

// `required` (transparent mode): the connection's original destination, the only
// address the request may go to, and only if the name resolves to it.
awaitable<void> handle_plain_http(ClientContext& ctx, tcp::socket& client, ReadBuffer& buf, RequestHead req,
                                  std::shared_ptr<const GatewayState> state, clock::time_point start,
                                  std::optional<tcp::endpoint> required = std::nullopt);

// The destination of a first request on the proxy listener (CONNECT
// host:port, or an absolute-form http:// URL's authority), for a refusal's
// log line; none when the target names no valid one.
std::optional<Authority> first_request_destination(const RequestHead& req);

}  // namespace vaultgate::net
