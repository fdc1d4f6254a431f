#include "net/proxy/session_auth.hpp"

#include "net/upstream/dialer.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/util/encoding.hpp"

#include <algorithm>
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

// "ses_" and letters, digits, '-' or '_': what the admin API hands out. An id
// of another shape may be anything a client typed there (a token, even), and
// is not logged unless a session has it.
bool looks_like_session_id(std::string_view id) {
    constexpr std::string_view prefix = "ses_";
    if (id.size() <= prefix.size() || id.size() > 64 || id.substr(0, prefix.size()) != prefix) return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

// Why the session named `id` with `token` is refused, or an empty reason.
std::string_view refusal_reason(const Session* s, std::string_view id, std::string_view token,
                                std::string_view client_ip, const RemovedSessions& removed) {
    // Only sessions with a token can be named; the default session is implicit.
    if (!s || s->token_digest.empty()) {
        const auto gone = removed.find(id);
        if (!gone) return "session_unknown";
        return *gone == SessionRemoval::expired ? "session_expired" : "session_revoked";
    }
    if (!constant_time_equal(token_digest(token), s->token_digest)) return "session_bad_token";
    if (s->expired_at(std::chrono::system_clock::now())) return "session_expired";
    if (!s->admits(parse_client_ip(client_ip))) return "session_source_mismatch";
    return {};
}

}  // namespace

SessionAuth authenticate_session(const GatewayState& state, const RequestHead& req, std::string_view client_ip,
                                 const RemovedSessions& removed) {
    SessionAuth out;
    auto header_count = req.count("proxy-authorization");
    if (header_count == 0) {
        out.session = state.default_session_for(parse_client_ip(client_ip), std::chrono::system_clock::now());
        if (!out.session) out.reason = "session_missing";
        return out;
    }
    out.reason = "session_bad_header";
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
    out.reason = refusal_reason(s, id, token, client_ip, removed);
    if (out.reason.empty())
        out.session = s;
    else if (s || looks_like_session_id(id) || removed.find(id))
        out.named_id = std::string(id);
    wipe_string(*decoded);
    return out;
}

const Session* session_for_source(const GatewayState& state, std::string_view client_ip) {
    return state.session_for_source(parse_client_ip(client_ip), std::chrono::system_clock::now());
}

}  // namespace vaultgate::net
