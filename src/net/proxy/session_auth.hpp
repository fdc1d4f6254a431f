#pragma once
// Which session a proxy request belongs to: Proxy-Authorization Basic
// "session_id:token", or the listener's default session when none is sent.
#include "vaultgate/http/message.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/state/removed_sessions.hpp"

#include <string_view>

namespace vaultgate::net {

struct SessionAuth {
    const Session* session = nullptr;
    // Without a session, why, for the access log: session_missing,
    // session_bad_header, session_unknown, session_revoked, session_expired,
    // session_bad_token or session_source_mismatch.
    std::string_view reason;
    // The id the client named, for the log: when it is or was a session, or
    // has the shape of a session id (never anything else a client put there).
    std::string named_id;
};

// A Proxy-Authorization that names no valid session is refused; it never falls
// back to the default session. `removed` tells revoked and expired sessions
// from ids never known.
SessionAuth authenticate_session(const GatewayState& state, const RequestHead& req, std::string_view client_ip,
                                 const RemovedSessions& removed);

// Transparent clients send no credentials: GatewayState::session_for_source
// (the narrowest pinned range that holds the address, else the default
// session when its source rule lets the client in).
const Session* session_for_source(const GatewayState& state, std::string_view client_ip);

}  // namespace vaultgate::net
