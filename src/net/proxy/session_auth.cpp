#include "net/proxy/session_auth.hpp"

#include "net/upstream/dialer.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/util/encoding.hpp"

#include <optional>

namespace vaultgate::net {

namespace {

// Strict base64 (RFC 4648, padding required when the length needs it).
std::optional<std::string> decode_base64(std::string_view in) {
    if (in.empty() || in.size() % 4 != 0 || in.size() > 4096) return std::nullopt;
    return base64_decode(in);
}

std::optional<IpAddress> parse_client_ip(std::string_view client_ip) {
    error_code ec;
    auto addr = asio::ip::make_address(std::string(client_ip), ec);
    if (ec) return std::nullopt;
    return to_ip_address(addr);
}

}  // namespace

SessionAuth authenticate_session(const GatewayState& state, const RequestHead& req, std::string_view client_ip) {
    SessionAuth out;
    auto header_count = req.count("proxy-authorization");
    if (header_count == 0) {
        out.session = state.default_session_for(parse_client_ip(client_ip), std::chrono::system_clock::now());
        return out;
    }
    if (header_count > 1) return out;
    std::string_view value = *req.get("proxy-authorization");
    constexpr std::string_view scheme = "basic ";
    if (value.size() <= scheme.size() || !iequals(value.substr(0, scheme.size()), scheme)) return out;
    value.remove_prefix(scheme.size());
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    auto decoded = decode_base64(value);
    if (!decoded) return out;
    auto colon = decoded->find(':');
    if (colon == std::string::npos) {
        wipe_string(*decoded);
        return out;
    }
    std::string_view id(decoded->data(), colon);
    std::string_view token(decoded->data() + colon + 1, decoded->size() - colon - 1);
    const Session* s = state.find_session(id);
    // Only sessions with a token can be named; the default session is implicit.
    bool ok = s && !s->token_digest.empty() && constant_time_equal(token_digest(token), s->token_digest) &&
              !s->expired_at(std::chrono::system_clock::now()) && s->admits(parse_client_ip(client_ip));
    wipe_string(*decoded);
    if (ok) out.session = s;
    return out;
}

const Session* session_for_source(const GatewayState& state, std::string_view client_ip) {
    return state.session_for_source(parse_client_ip(client_ip), std::chrono::system_clock::now());
}

}  // namespace vaultgate::net
