// /v1/sessions: making, listing and ending sessions.
#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/admin/endpoints.hpp"
#include "vaultgate/admin/json_views.hpp"
#include "vaultgate/admin/request_body.hpp"
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/util/json_wipe.hpp"

#include <algorithm>

namespace vaultgate::admin {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using sys_clock = std::chrono::system_clock;

std::vector<std::string> session_vault_ids(const Catalog& catalog, const json& root) {
    std::vector<std::string> ids;
    const json* list = optional_field(root, "vault_ids");
    if (!list) return ids;
    if (!list->is_array()) fail(400, "invalid_request", "vault_ids: expected a list of vault ids");
    for (std::size_t i = 0; i < list->size(); ++i) {
        const auto where = "vault_ids[" + std::to_string(i) + "]";
        const json& item = (*list)[i];
        if (!item.is_string()) fail(400, "invalid_request", where + ": expected a string");
        const auto ref = catalog.find_vault(item.get_ref<const std::string&>());
        // The id is not quoted back: whatever was pasted there stays out of the answer.
        if (!ref) fail(404, "unknown_vault", where + ": no vault with this id or name");
        // Stored as the id, so that a later vault of a departed one's name
        // does not inherit the session.
        std::string canonical = ref->api ? ref->api->id : ref->config->name;
        if (std::find(ids.begin(), ids.end(), canonical) == ids.end()) ids.push_back(std::move(canonical));
    }
    return ids;
}

EgressPolicy session_policy(const Config& config, const json& root) {
    const json* p = optional_field(root, "egress_policy");
    if (!p) {
        if (const auto it = config.egress_policies.find("default"); it != config.egress_policies.end()) {
            EgressPolicy policy = it->second;
            policy.name = "default";
            return policy;
        }
        return deny_all_policy();
    }
    if (p->is_string()) {
        const auto& name = p->get_ref<const std::string&>();
        const auto it = config.egress_policies.find(name);
        if (it == config.egress_policies.end())
            fail(400, "unknown_policy", "egress_policy: the config defines no egress policy of that name");
        EgressPolicy policy = it->second;
        policy.name = name;
        return policy;
    }
    if (p->is_object()) {
        std::string why;
        auto policy = policy_from_json(*p, &why);
        if (!policy) fail(400, "invalid_policy", "egress_policy: " + why);
        policy->name.clear();  // inline: the session's own, never looked up by name
        return std::move(*policy);
    }
    fail(400, "invalid_request", "egress_policy: expected a policy object or the name of a config policy");
}

std::chrono::seconds session_ttl(std::chrono::seconds max_ttl, const json& root) {
    const json* t = optional_field(root, "ttl_seconds");
    if (!t) return std::min(default_session_ttl, max_ttl);
    const std::string range = "ttl_seconds: expected an integer from 1 to " + std::to_string(max_ttl.count());
    if (!t->is_number_integer()) fail(400, "invalid_ttl", range);
    if (t->is_number_unsigned()) {
        const auto v = t->get<std::uint64_t>();
        if (v < 1 || v > static_cast<std::uint64_t>(max_ttl.count())) fail(400, "invalid_ttl", range);
        return std::chrono::seconds(static_cast<std::int64_t>(v));
    }
    const auto v = t->get<std::int64_t>();
    if (v < 1 || v > max_ttl.count()) fail(400, "invalid_ttl", range);
    return std::chrono::seconds(v);
}

std::optional<Cidr> session_source(const json& root) {
    const json* s = optional_field(root, "source");
    if (!s) return std::nullopt;
    const std::string message = "source: expected an IP address or CIDR such as 10.0.0.0/24";
    if (!s->is_string()) fail(400, "invalid_source", message);
    auto cidr = parse_cidr(s->get_ref<const std::string&>());
    if (!cidr) fail(400, "invalid_source", message);
    return cidr;
}

AdminResponse create_session(Catalog& catalog, const AdminOptions& options, const AdminRequest& req) {
    ParsedBody body(req.body);
    require_keys(body.root(), {"vault_ids", "egress_policy", "ttl_seconds", "source"});
    StoredSession session;
    session.vault_ids = session_vault_ids(catalog, body.root());
    session.policy = session_policy(catalog.config(), body.root());
    const auto ttl = session_ttl(options.max_ttl, body.root());
    session.source = session_source(body.root());

    // Whole seconds, so that the expires_at the client reads is exact; rounded
    // up, so that a session never lives less than the ttl it asked for.
    const auto expires = std::chrono::ceil<std::chrono::seconds>(sys_clock::now()) + ttl;
    session.id = random_id("ses_");
    session.created_at_ms = to_ms(sys_clock::now());
    session.expires_at_ms = to_ms(expires);
    std::string token = random_token();
    session.token_digest = token_digest(token);  // only the digest is kept

    try {
        catalog.add_session(session);
    } catch (...) {
        wipe_string(token);
        throw;
    }

    const std::string base =
        options.proxy_url.empty() ? "http://" + catalog.config().listen_proxy.to_string() : options.proxy_url;
    std::string proxy_url = session_proxy_url(base, session.id, token);
    ordered_json out = new_session_json(session, token, proxy_url, options.ca_cert_pem);
    AdminResponse response = json_response(201, out);
    // The response body is now the token's only copy here.
    wipe_json_strings(out);
    wipe_string(proxy_url);
    wipe_string(token);
    return response;
}

bool live(const StoredSession& session) { return session.expires_at_ms > to_ms(sys_clock::now()); }

// Config sessions first, in the config's order of names, then the API's in
// creation order; expired ones are over even before the sweep removes them.
AdminResponse list_sessions(const Catalog& catalog) {
    ordered_json sessions = ordered_json::array();
    for (const auto& [id, config] : catalog.config().sessions) sessions.push_back(config_session_json(id, config));
    for (const auto& s : catalog.data().sessions)
        if (live(s) && !catalog.config().sessions.count(s.id)) sessions.push_back(api_session_json(s, catalog));
    ordered_json body;
    body["sessions"] = std::move(sessions);
    return json_response(200, body);
}

AdminResponse get_session(const Catalog& catalog, std::string_view id) {
    // A config session of the same id is the one the proxy uses (compose_state).
    if (const auto it = catalog.config().sessions.find(std::string(id)); it != catalog.config().sessions.end())
        return json_response(200, config_session_json(it->first, it->second));
    for (const auto& s : catalog.data().sessions)
        if (s.id == id && live(s)) return json_response(200, api_session_json(s, catalog));
    fail(404, "session_not_found", "no session with this id");
}

}  // namespace

void add_session_routes(Router& router, const EndpointContext* ctx) {
    router.add("GET", "/v1/sessions", [ctx](const RouteCall&) { return list_sessions(*ctx->catalog); });
    router.add("POST", "/v1/sessions",
               [ctx](const RouteCall& c) { return create_session(*ctx->catalog, *ctx->options, c.request); });
    router.add("GET", "/v1/sessions/*", [ctx](const RouteCall& c) { return get_session(*ctx->catalog, c.params[0]); });
    router.add("DELETE", "/v1/sessions/*", [ctx](const RouteCall& c) {
        c.closed_sessions.push_back(ctx->catalog->remove_session(c.params[0]));
        return no_content();
    });
}

}  // namespace vaultgate::admin
