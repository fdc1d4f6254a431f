#include "vaultgate/state/request_plan.hpp"

#include <stdexcept>

namespace vaultgate {

namespace {

std::string_view path_of(std::string_view target) {
    auto end = target.find_first_of("?#");
    return end == std::string_view::npos ? target : target.substr(0, end);
}

bool is_websocket_upgrade(const RequestHead& req, const std::vector<std::string>& options) {
    auto upgrade = req.get("upgrade");
    return upgrade && iequals(*upgrade, "websocket") && listed_in(options, "upgrade") && req.method == "GET";
}

// Proxy-* fields are for vaultgate, never for the origin: Proxy-Authorization
// holds the session token. '_' counts as '-', as some servers read it.
bool is_proxy_field(std::string_view name) {
    return name.size() >= 6 && iequals(name.substr(0, 5), "proxy") && (name[5] == '-' || name[5] == '_');
}

// The origin-form target of a request inside a tunnel to `dest`, after the
// Host and target checks; a refusal when they fail.
Refusal check_target(const RequestHead& req, const Authority& dest, std::string& origin_form) {
    auto host = req.get("host");
    if (!host) return refusal(400, "missing_host", "the request has no Host header");
    auto parsed = parse_authority(*host, 443);
    if (!parsed) return refusal(400, "bad_host", "the Host header is not a valid host[:port]");
    if (parsed.authority->host != dest.host || parsed.authority->port != dest.port)
        return refusal(421, "misdirected_request", "the Host header names another host than the CONNECT target");

    std::string_view target = req.target;
    if (req.method == "CONNECT") return refusal(405, "method_not_allowed", "CONNECT inside a tunnel is not allowed");
    if (target == "*") {
        if (req.method != "OPTIONS") return refusal(400, "bad_target", "'*' is only valid with OPTIONS");
        origin_form = "*";
        return {};
    }
    if (!target.empty() && target.front() == '/') {
        origin_form = std::string(target);
        return {};
    }
    constexpr std::string_view https = "https://";
    if (target.size() > https.size() && iequals(target.substr(0, https.size()), https)) {
        auto rest = target.substr(https.size());
        auto slash = rest.find_first_of("/?#");
        auto authority = parse_authority(rest.substr(0, slash), 443);
        if (!authority || authority.authority->host != dest.host || authority.authority->port != dest.port)
            return refusal(421, "misdirected_request",
                           "the absolute-form target names another host than the CONNECT target");
        if (slash == std::string_view::npos)
            origin_form = "/";
        else if (rest[slash] == '/')
            origin_form = std::string(rest.substr(slash));
        else
            origin_form = "/" + std::string(rest.substr(slash));
        return {};
    }
    return refusal(400, "bad_target", "the request target must be origin-form or https:// absolute-form");
}

// What the log line and the response framing need of the request, which the
// outgoing head takes over.
void summarize(RequestPlan& plan, const RequestHead& req, std::string_view target) {
    plan.summary.method = req.method;
    plan.summary.target = std::string(target);
    plan.summary.version_minor = req.version_minor;
}

// The outgoing head and what it says of the exchange; a refusal for an
// Expect other than 100-continue.
Refusal plan_outgoing(RequestPlan& plan, RequestHead&& req, std::string origin_form, std::string host_header) {
    auto outgoing = build_outgoing_head(std::move(req), std::move(origin_form), std::move(host_header), plan.framing,
                                        plan.websocket, plan.redact);
    if (outgoing.bad_expect) return refusal(417, "expectation_failed", "only 100-continue is supported");
    plan.expect_continue = outgoing.expect_continue;
    plan.outgoing = std::move(outgoing.head);
    return {};
}

}  // namespace

Refusal refusal(int status, std::string_view code, std::string message, std::string_view reason) {
    Refusal r;
    r.status = status;
    r.code = code;
    r.reason = reason.empty() ? code : reason;
    r.message = std::move(message);
    return r;
}

std::string policy_label(const EgressPolicy& policy) { return policy.name.empty() ? "inline" : policy.name; }

Refusal denial(DenyReason reason, const EgressPolicy* policy) {
    Refusal r;
    r.status = 403;
    r.form = Refusal::Form::denied;
    r.reason = deny_reason_name(reason);
    r.deny = reason;
    if (policy) r.policy = policy_label(*policy);
    return r;
}

Refusal proxy_auth_refusal(std::string_view reason) {
    Refusal r;
    r.status = 407;
    r.form = Refusal::Form::proxy_auth;
    r.reason = reason;
    r.message = reason == "session_missing" ? "this proxy needs Proxy-Authorization: Basic base64(session_id:token)"
                                            : "the Proxy-Authorization credentials were not accepted";
    return r;
}

Decision decide_bound_request(const GatewayState& state, std::string_view session_id, const Authority& dest,
                              RequestHead&& req, std::chrono::system_clock::time_point now) {
    Decision d;
    RequestPlan& plan = d.plan;
    summarize(plan, req, req.target);
    auto framing = request_framing(req);
    if (!framing.framing) {
        d.refusal = refusal(400, "bad_framing", std::move(framing.reason));
        return d;
    }
    plan.framing = *framing.framing;
    std::string origin_form;
    if ((d.refusal = check_target(req, dest, origin_form))) return d;
    if (req.method == "TRACE" || req.method == "TRACK") {
        d.refusal = refusal(405, "method_not_allowed", "TRACE and TRACK are refused on bound hosts");
        return d;
    }

    const Session* session = state.active_session(session_id, now);
    if (!session) {
        d.refusal = proxy_auth_refusal("session_gone");
        return d;
    }
    plan.session = session;
    auto chosen = state.binding_for_request(*session, dest.host, dest.port, path_of(origin_form));
    if (chosen.coverage == Coverage::unclear_path) {
        // Forwarded as it is, it might reach a covered path; the credential is never risked on it.
        d.refusal = denial(DenyReason::path_not_covered, &session->policy);
        return d;
    }
    if (chosen.coverage == Coverage::tied) {
        d.refusal = refusal(503, "binding_conflict", "two bound services of this session match the request equally");
        return d;
    }
    plan.binding = chosen.binding;
    if (plan.binding && !plan.binding->secret) {
        d.refusal = refusal(503, "credential_missing", "the vault has no value for this service's credential");
        return d;
    }
    plan.redact = plan.binding && plan.binding->service->config.redact_response;
    if (plan.redact && !plan.binding->service->redaction) {
        d.refusal = refusal(502, "redaction_unavailable",
                            "the credential also occurs in its redaction placeholder, so responses cannot be redacted");
        return d;
    }
    // A spliced WebSocket cannot be scanned, so redacted services get no upgrade.
    plan.websocket = !plan.redact && is_websocket_upgrade(req, connection_tokens(req.headers));
    plan.client_close = wants_close(req.headers, req.version_minor);
    if ((d.refusal =
             plan_outgoing(plan, std::move(req), std::move(origin_form), format_authority(dest, dest.port != 443)))) {
        // A refused Expect is the client's mistake, before any credential: the log names no binding.
        plan.binding.reset();
    }
    return d;
}

Decision decide_plain_request(const GatewayState& state, const Session& session, const Authority& dest,
                              std::string origin_form, RequestHead&& req) {
    Decision d;
    RequestPlan& plan = d.plan;
    plan.session = &session;
    summarize(plan, req, origin_form);
    auto route = state.route(session, dest, EgressKind::plain_http);
    if (route.kind == RouteKind::denied) {
        d.refusal = denial(route.reason, &session.policy);
        return d;
    }
    auto framing = request_framing(req);
    if (!framing.framing) {
        d.refusal = refusal(400, "bad_framing", std::move(framing.reason));
        return d;
    }
    plan.framing = *framing.framing;
    if (req.method == "TRACE" || req.method == "TRACK") {
        d.refusal = refusal(405, "method_not_allowed", "TRACE and TRACK are refused");
        return d;
    }
    // One request per connection: the answer carries Connection: close.
    plan.client_close = true;
    d.refusal = plan_outgoing(plan, std::move(req), std::move(origin_form), format_authority(dest, dest.port != 80));
    return d;
}

Refusal apply_credential(RequestHead& outgoing, const AuthSpec& spec, const Secret& value) {
    try {
        inject_credential(outgoing, spec, value);
    } catch (const std::invalid_argument&) {
        // A credential with CR/LF/NUL would split the head: refuse, name nothing.
        return refusal(502, "credential_unusable", "the vault's credential cannot be sent in an HTTP header");
    }
    return {};
}

OutgoingHead build_outgoing_head(RequestHead&& client_head, std::string origin_form, std::string host_header,
                                 const BodyFraming& framing, bool websocket, bool strip_accept_encoding) {
    OutgoingHead out;
    auto tokens = connection_tokens(client_head.headers);
    auto upgrade = client_head.get("upgrade");
    std::string upgrade_value = upgrade ? std::string(*upgrade) : std::string();
    RequestHead& up = out.head;
    up.method = std::move(client_head.method);
    up.target = std::move(origin_form);
    up.version_minor = 1;
    up.headers.reserve(client_head.headers.size() + 3);
    up.headers.push_back({"Host", std::move(host_header)});
    for (auto& h : client_head.headers) {
        if (is_hop_by_hop(h.name) || is_proxy_field(h.name) || listed_in(tokens, h.name) ||
            iequals(h.name, "content-length") || iequals(h.name, "host"))
            continue;
        if (iequals(h.name, "expect")) {
            if (iequals(h.value, "100-continue"))
                out.expect_continue = true;
            else
                out.bad_expect = true;
            continue;
        }
        // Redaction needs an identity-encoded body to scan.
        if (strip_accept_encoding && iequals(h.name, "accept-encoding")) continue;
        up.headers.push_back(std::move(h));
    }
    if (framing.kind == BodyKind::content_length)
        up.headers.push_back({"Content-Length", std::to_string(framing.length)});
    else if (framing.kind == BodyKind::chunked)
        up.headers.push_back({"Transfer-Encoding", "chunked"});
    if (websocket) {
        up.headers.push_back({"Connection", "Upgrade"});
        up.headers.push_back({"Upgrade", std::move(upgrade_value)});
    }
    if (framing.kind == BodyKind::none) out.expect_continue = false;
    return out;
}

}  // namespace vaultgate
