// POST /v1/explain: the proxy's decision for a request, asked of the proxy's
// own decision functions, with the setting that made it.
#include "vaultgate/admin/explain.hpp"

#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/admin/request_body.hpp"
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/http/syntax.hpp"
#include "vaultgate/state/request_plan.hpp"

namespace vaultgate::admin {

namespace {

using nlohmann::ordered_json;

constexpr std::size_t max_url_bytes = 8192;
constexpr std::size_t max_method_bytes = 32;
constexpr std::uint16_t https_port = 443;
constexpr std::uint16_t http_port = 80;

const std::string& string_field(const nlohmann::json& root, std::string_view key, std::string_view expected) {
    const nlohmann::json* field = optional_field(root, key);
    if (!field->is_string() || field->get_ref<const std::string&>().empty())
        fail(400, "invalid_request", std::string(key) + ": expected " + std::string(expected));
    return field->get_ref<const std::string&>();
}

// The destination and origin-form target of `url`, parsed as the proxy parses
// a CONNECT authority (https) or an absolute-form request (http).
void parse_url(const std::string& url, Explanation& e, std::string& origin_form) {
    std::string_view authority;
    std::uint16_t default_port = https_port;
    e.scheme = "https";
    if (!split_absolute_url(url, "https://", authority, origin_form)) {
        e.scheme = "http";
        default_port = http_port;
        if (!split_absolute_url(url, "http://", authority, origin_form))
            fail(400, "invalid_url",
                 "url: expected https://host[:port]/path or http://host[:port]/path, without user info");
    }
    const AuthorityResult parsed = parse_authority(authority, default_port);
    if (!parsed) fail(400, "invalid_url", "url: " + std::string(host_error_text(parsed.error)));
    e.destination = *parsed.authority;
    e.path = origin_form.substr(0, origin_form.find('?'));
}

const Session* find_session(const GatewayState& state, const ExplainQuery& query,
                            std::chrono::system_clock::time_point now) {
    if (query.session) {
        const Session* session = state.active_session(*query.session, now);
        if (!session) fail(404, "session_not_found", "no session with this id");
        return session;
    }
    return state.default_session ? state.active_session(*state.default_session, now) : nullptr;
}

DecidingKey destination_key(const DestinationVerdict& verdict) {
    switch (verdict.key) {
        case PolicyKey::allow_https:
        case PolicyKey::allow_http:
            return {std::string(policy_key_name(verdict.key)), "false"};
        case PolicyKey::allowed_domains:
        case PolicyKey::allow_package_managers:
            return {std::string(policy_key_name(verdict.key)), verdict.domain ? domain_rule_text(*verdict.domain) : ""};
        case PolicyKey::allowed_cidrs:
            return {std::string(policy_key_name(verdict.key)), verdict.cidr ? cidr_text(*verdict.cidr) : ""};
        default:
            return {std::string(policy_key_name(verdict.key)), ""};
    }
}

DecidingKey address_key(const AddressVerdict& verdict, const IpAddress& address, const Authority& dest) {
    if (verdict.reason == DenyReason::self_connection) return {"listen", address.to_string()};
    switch (verdict.key) {
        case PolicyKey::allowed_cidrs:
            return {"allowed_cidrs", verdict.cidr ? cidr_text(*verdict.cidr) : ""};
        case PolicyKey::upstream_resolve:
            return {"upstream.resolve", dest.host};
        default:
            return {"address_class", std::string(address_class_name(verdict.address_class))};
    }
}

ExplainedBinding explained(const Binding& binding) {
    const ServiceConfig& config = binding.service->config;
    ExplainedBinding b;
    b.vault = binding.vault->name;
    b.vault_id = binding.vault->id;
    b.service = binding.service->id;
    b.host = config.host;
    b.port = config.port;
    b.path_prefix = config.path_prefix;
    b.auth_type = std::string(auth_type_name(config.auth.type));
    b.credential = config.auth.primary_credential();
    b.credentials = config.auth.credential_names();
    b.credential_set = binding.secret != nullptr;
    b.redact_response = config.redact_response;
    return b;
}

void refuse(Explanation& e, const Refusal& refusal) {
    e.status = refusal.status;
    e.reason = std::string(refusal.reason);
    e.deny = refusal.deny;
    if (refusal.form == Refusal::Form::denied) e.action = "denied";
}

// A request inside a CONNECT tunnel the proxy intercepts, decided as the MITM session decides it.
void explain_bound(const GatewayState& state, const Session& session, const std::string& origin_form,
                   std::chrono::system_clock::time_point now, Explanation& e) {
    RequestHead head;
    head.method = e.method;
    head.target = origin_form;
    head.headers.push_back({"Host", format_authority(e.destination, e.destination.port != https_port)});
    const Decision decision = decide_bound_request(state, session.id, e.destination, std::move(head), now);
    e.action = "mitm";
    if (decision.plan.binding) e.binding = explained(*decision.plan.binding);
    // A path outside every path_prefix is forwarded without a credential: the
    // host is still intercepted because of its bound services.
    const auto bound = state.bindings_for(session, e.destination.host, e.destination.port);
    const std::string service = e.binding ? e.binding->service : bound.empty() ? "" : bound.front().service->id;
    e.decided_by = {"bound_service", service};
    if (decision.refusal) refuse(e, decision.refusal);
}

void explain_plain(const GatewayState& state, const Session& session, std::string origin_form, Explanation& e) {
    RequestHead head;
    head.method = e.method;
    head.target = "http://" + format_authority(e.destination) + origin_form;
    head.headers.push_back({"Host", format_authority(e.destination, e.destination.port != http_port)});
    const Decision decision =
        decide_plain_request(state, session, e.destination, std::move(origin_form), std::move(head));
    e.action = "http";
    e.decided_by = destination_key(judge_destination(session.policy, e.destination, EgressKind::plain_http));
    if (decision.refusal) refuse(e, decision.refusal);
}

ordered_json key_json(const DecidingKey& key) {
    ordered_json j;
    j["key"] = key.key;
    j["value"] = key.value;
    return j;
}

template <class T>
ordered_json or_null(const std::optional<T>& value) {
    return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json binding_json(const ExplainedBinding& b) {
    ordered_json j;
    j["vault"] = b.vault;
    j["vault_id"] = b.vault_id;
    j["service"] = b.service;
    j["host"] = b.host;
    j["port"] = b.port;
    j["path_prefix"] = b.path_prefix;
    j["auth_type"] = b.auth_type;
    j["credential"] = b.credential;
    j["credentials"] = b.credentials;
    j["credential_set"] = b.credential_set;
    j["redact_response"] = b.redact_response;
    return j;
}

}  // namespace

ExplainQuery parse_explain_query(const std::string& body) {
    const ParsedBody parsed(body);
    const nlohmann::json& root = parsed.root();
    require_keys(root, {"url", "session", "method"});
    ExplainQuery query;
    query.url = required_string(root, "url");
    if (query.url.size() > max_url_bytes)
        fail(400, "invalid_url", "url: longer than " + std::to_string(max_url_bytes) + " bytes");
    if (optional_field(root, "session")) query.session = string_field(root, "session", "a session id");
    if (optional_field(root, "method")) {
        query.method = string_field(root, "method", "an HTTP method such as GET");
        if (!syntax::is_token(query.method) || query.method.size() > max_method_bytes)
            fail(400, "invalid_request", "method: expected an HTTP method such as GET");
    }
    return query;
}

Explanation explain_request(const GatewayState& state, const ExplainQuery& query,
                            std::chrono::system_clock::time_point now) {
    Explanation e;
    e.method = query.method;
    std::string origin_form;
    parse_url(query.url, e, origin_form);

    const Session* session = find_session(state, query, now);
    if (!session) {
        e.action = "denied";
        refuse(e, proxy_auth_refusal("session_required"));
        e.deny = DenyReason::session_required;
        e.decided_by = {"sessions.default", ""};
        return e;
    }
    e.session = session->id;
    if (!session->policy.name.empty()) e.policy = session->policy.name;
    e.policy_rules = session->policy;

    if (e.scheme == "http") {
        explain_plain(state, *session, std::move(origin_form), e);
        return e;
    }
    const Route route = state.route(*session, e.destination, EgressKind::connect);
    if (route.kind == RouteKind::mitm) {
        explain_bound(state, *session, origin_form, now, e);
        return e;
    }
    e.decided_by = destination_key(judge_destination(session->policy, e.destination, EgressKind::connect));
    if (route.kind == RouteKind::denied)
        refuse(e, denial(route.reason));
    else
        e.action = "tunnel";
    return e;
}

void settle_addresses(Explanation& e, const ExplainResolution& resolution) {
    e.resolved = true;
    e.address_source = resolution.source;
    e.resolve_error = resolution.error;
    for (const auto& [address, verdict] : resolution.addresses)
        e.addresses.push_back({address.to_string(), std::string(address_class_name(verdict.address_class)),
                               verdict.reason, address_key(verdict, address, e.destination)});
    if (!e.would_dial()) return;
    if (!resolution.error.empty()) {
        e.status = resolution.error == "resolve_timeout" ? 504 : 502;
        e.reason = resolution.error;
        return;
    }
    // As the dialer: one denied answer refuses the name.
    for (const auto& address : e.addresses) {
        if (address.reason == DenyReason::none) continue;
        refuse(e, denial(address.reason));
        e.decided_by = address.decided_by;
        return;
    }
}

nlohmann::ordered_json explanation_json(const Explanation& e) {
    ordered_json j;
    j["action"] = e.action;
    j["status"] = e.status ? ordered_json(e.status) : ordered_json(nullptr);
    j["reason"] = e.reason.empty() ? ordered_json(nullptr) : ordered_json(e.reason);
    j["decided_by"] = key_json(e.decided_by);
    j["advice"] =
        e.deny == DenyReason::none
            ? ordered_json(nullptr)
            : ordered_json(named_deny_advice(e.deny, e.destination, e.policy.value_or(e.session ? "inline" : "")));
    ordered_json request;
    request["method"] = e.method;
    request["scheme"] = e.scheme;
    request["host"] = e.destination.host;
    request["port"] = e.destination.port;
    request["path"] = e.path;
    j["request"] = std::move(request);
    j["session"] = or_null(e.session);
    j["policy"] = or_null(e.policy);
    j["binding"] = e.binding ? binding_json(*e.binding) : ordered_json(nullptr);
    if (e.resolved) {
        ordered_json resolution;
        resolution["source"] = e.address_source;
        resolution["error"] = e.resolve_error.empty() ? ordered_json(nullptr) : ordered_json(e.resolve_error);
        j["resolution"] = std::move(resolution);
    } else {
        j["resolution"] = nullptr;
    }
    ordered_json addresses = ordered_json::array();
    for (const auto& a : e.addresses) {
        ordered_json entry;
        entry["address"] = a.address;
        entry["class"] = a.address_class;
        entry["allowed"] = a.reason == DenyReason::none;
        entry["reason"] = a.reason == DenyReason::none ? ordered_json(nullptr)
                                                       : ordered_json(std::string(deny_reason_name(a.reason)));
        entry["decided_by"] = key_json(a.decided_by);
        addresses.push_back(std::move(entry));
    }
    j["addresses"] = std::move(addresses);
    return j;
}

}  // namespace vaultgate::admin
