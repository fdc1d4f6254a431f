#pragma once
// Which session a proxy request belongs to: Proxy-Authorization Basic
// "session_id:token", or the listener's default session when none is sent.
#include "vaultgate/http/message.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <string_view>

namespace vaultgate::net {

struct SessionAuth {
    const Session* session = nullptr;
};

// A Proxy-Authorization that names no valid session is refused; it never falls
// back to the default session.
SessionAuth authenticate_session(const GatewayState& state, const RequestHead& req, std::string_view client_ip);

// Transparent clients send no credentials: GatewayState::session_for_source
// (the narrowest pinned range that holds the address, else the default
// session when its source rule lets the client in).
const Session* session_for_source(const GatewayState& state, std::string_view client_ip);

}  // namespace vaultgate::net
