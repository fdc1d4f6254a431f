#include "session_auth.hpp"

namespace vaultgate::net {

SessionAuth authenticate_session(const GatewayState& state, const RequestHead& req, std::string_view client_ip) {
    SessionAuth out;
    if (req.count("proxy-authorization") > 0) return out;  // token sessions: see the admin API
    out.session = state.default_session_ptr();
    return out;
}

}  // namespace vaultgate::net
