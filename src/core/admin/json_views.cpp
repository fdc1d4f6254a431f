// How vaults, services, sessions and log entries are rendered. Credential
// values never appear: a credential shows as its name, version and fingerprint;
// a session shows neither its token nor the token's digest.
#include "vaultgate/admin/json_views.hpp"

#include "vaultgate/config/json_codec.hpp"

#include <cstdio>
#include <ctime>
#include <optional>

namespace vaultgate::admin {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view no_proxy_hosts = "localhost,127.0.0.1,::1";

}  // namespace

std::string rfc3339(std::int64_t ms) {
    std::int64_t secs = ms / 1000;
    std::int64_t rem = ms % 1000;
    if (rem < 0) {
        rem += 1000;
        --secs;
    }
    const auto t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string out(buf, n);
    if (rem != 0) {
        char frac[8];
        std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(rem));
        out += frac;
    }
    out += 'Z';
    return out;
}

ordered_json service_json(const std::string& id, const ServiceConfig& config) {
    ordered_json j;
    j["id"] = id;
    // Held in a local: a range-for over items() of a temporary would dangle.
    const json fields = service_to_json(config);
    for (const auto& item : fields.items()) j[item.key()] = ordered_json(item.value());
    return j;
}

ordered_json api_vault_json(const StoredVault& v, const Secret& master_key) {
    ordered_json j;
    j["id"] = v.id;
    j["name"] = v.name;
    j["source"] = "api";
    j["created_at"] = rfc3339(v.created_at_ms);
    ordered_json credentials = ordered_json::array();
    for (const auto& c : v.credentials) {
        ordered_json cj;
        cj["name"] = c.name;
        cj["version"] = c.version;
        cj["fingerprint"] = credential_fingerprint(master_key, c.value.reveal());
        cj["updated_at"] = rfc3339(c.updated_at_ms);
        credentials.push_back(std::move(cj));
    }
    j["credentials"] = std::move(credentials);
    ordered_json services = ordered_json::array();
    for (const auto& s : v.services) services.push_back(service_json(s.id, s.config));
    j["services"] = std::move(services);
    return j;
}

ordered_json config_vault_json(const VaultConfig& vc, const Catalog& catalog) {
    const auto& config_state = catalog.config_state();
    const auto built = config_state.vaults.find(vc.name);
    const Vault* vault = built == config_state.vaults.end() ? nullptr : &built->second;
    ordered_json j;
    j["id"] = vc.name;
    j["name"] = vc.name;
    j["source"] = "config";
    ordered_json credentials = ordered_json::array();
    for (const auto& [name, source] : vc.credentials) {
        ordered_json cj;
        cj["name"] = name;
        cj["version"] = 1;
        const Secret* secret = nullptr;
        if (vault)
            if (const auto it = vault->credentials.find(name); it != vault->credentials.end()) secret = &it->second;
        if (secret)
            cj["fingerprint"] = credential_fingerprint(catalog.master_key(), secret->reveal());
        else
            cj["missing"] = true;
        cj["updated_at"] = rfc3339(catalog.config_loaded_ms());
        credentials.push_back(std::move(cj));
    }
    j["credentials"] = std::move(credentials);
    ordered_json services = ordered_json::array();
    if (vault)
        for (const auto& s : vault->services) services.push_back(service_json(s.id, s.config));
    j["services"] = std::move(services);
    return j;
}

std::string session_proxy_url(std::string_view base, std::string_view id, std::string_view token) {
    std::string_view scheme = "http";
    if (const auto pos = base.find("://"); pos != std::string_view::npos) {
        scheme = base.substr(0, pos);
        base.remove_prefix(pos + 3);
    }
    // Userinfo in the configured URL would make two sets of credentials.
    if (const auto at = base.substr(0, base.find('/')).rfind('@'); at != std::string_view::npos)
        base.remove_prefix(at + 1);
    std::string url;
    url.reserve(scheme.size() + 3 + id.size() + 1 + token.size() + 1 + base.size());
    url.append(scheme).append("://").append(id).append(":").append(token).append("@").append(base);
    return url;
}

ordered_json new_session_json(const StoredSession& session, const std::string& token, const std::string& proxy_url,
                              const std::string& ca_cert_pem) {
    ordered_json env;
    for (const char* name : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}) env[name] = proxy_url;
    env["NO_PROXY"] = no_proxy_hosts;
    env["no_proxy"] = no_proxy_hosts;
    ordered_json out;
    out["id"] = session.id;
    out["token"] = token;
    out["expires_at"] = rfc3339(session.expires_at_ms);
    out["proxy_url"] = proxy_url;
    out["env"] = std::move(env);
    out["ca_cert_pem"] = ca_cert_pem;
    return out;
}

namespace {

ordered_json vault_ref_json(const std::string& id, const std::optional<std::string>& name) {
    ordered_json j;
    j["id"] = id;
    j["name"] = name ? ordered_json(*name) : ordered_json(nullptr);
    return j;
}

// The name of a vault a stored session names, as compose_state follows it:
// an API vault by id, a config vault by name; null when neither exists now.
std::optional<std::string> session_vault_name(const Catalog& catalog, const std::string& id) {
    for (const auto& v : catalog.data().vaults)
        if (v.id == id) return v.name;
    for (const auto& vc : catalog.config().vaults)
        if (vc.name == id) return vc.name;
    return std::nullopt;
}

}  // namespace

ordered_json api_session_json(const StoredSession& session, const Catalog& catalog) {
    ordered_json j;
    j["id"] = session.id;
    j["origin"] = "api";
    ordered_json vaults = ordered_json::array();
    for (const auto& id : session.vault_ids) vaults.push_back(vault_ref_json(id, session_vault_name(catalog, id)));
    j["vaults"] = std::move(vaults);
    // An unnamed policy is the session's own, given inline (or the allow-nothing
    // one it got when the config had no default policy).
    if (session.policy.name.empty()) {
        j["egress_policy"] = "inline";
        const json inline_policy = policy_to_json(session.policy);
        j["inline_policy"] = ordered_json(inline_policy);
    } else {
        j["egress_policy"] = session.policy.name;
    }
    j["source"] = session.source ? ordered_json(cidr_text(*session.source)) : ordered_json(nullptr);
    j["created_at"] = session.created_at_ms ? ordered_json(rfc3339(session.created_at_ms)) : ordered_json(nullptr);
    j["expires_at"] = rfc3339(session.expires_at_ms);
    return j;
}

ordered_json config_session_json(const std::string& id, const SessionConfig& session) {
    ordered_json j;
    j["id"] = id;
    j["origin"] = "config";
    ordered_json vaults = ordered_json::array();
    for (const auto& name : session.vaults) vaults.push_back(vault_ref_json(name, name));
    j["vaults"] = std::move(vaults);
    j["egress_policy"] = session.egress_policy;
    j["source"] = nullptr;
    // A config session lives as long as the config names it.
    j["created_at"] = nullptr;
    j["expires_at"] = nullptr;
    return j;
}

ordered_json log_entries_json(const std::vector<const AccessLogEntry*>& picked) {
    ordered_json entries = ordered_json::array();
    // Through the log's own line format, so both read the same.
    for (const auto* entry : picked) entries.push_back(ordered_json::parse(to_json_line(*entry)));
    ordered_json body;
    body["entries"] = std::move(entries);
    return body;
}

}  // namespace vaultgate::admin
