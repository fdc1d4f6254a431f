// The snapshot the proxy decides with, from the config's state and the API's data.
#include "vaultgate/admin/catalog.hpp"

#include <map>

namespace vaultgate {

namespace admin {

using sys_clock = std::chrono::system_clock;

std::int64_t to_ms(sys_clock::time_point tp) {
    return std::chrono::floor<std::chrono::milliseconds>(tp.time_since_epoch()).count();
}

EgressPolicy deny_all_policy() {
    EgressPolicy p;
    p.allow_https = false;
    p.allow_http = false;
    p.allow_package_managers = false;
    return p;
}

namespace {

sys_clock::time_point from_ms(std::int64_t ms) {
    return sys_clock::time_point(std::chrono::duration_cast<sys_clock::duration>(std::chrono::milliseconds(ms)));
}

// An inline policy (no name) is the session's own. A named one is looked up in
// the running config, so a reload that tightens it applies to live sessions;
// one the config dropped allows nothing rather than what it used to.
EgressPolicy effective_policy(const EgressPolicy& stored, const Config& config) {
    if (stored.name.empty()) return stored;
    if (const auto it = config.egress_policies.find(stored.name); it != config.egress_policies.end()) {
        EgressPolicy p = it->second;
        p.name = stored.name;
        return p;
    }
    EgressPolicy p = deny_all_policy();
    p.name = stored.name;
    return p;
}

}  // namespace
}  // namespace admin

std::shared_ptr<const GatewayState> compose_state(const GatewayState& config_state, const Config& config,
                                                  const StoreData& data, std::chrono::system_clock::time_point now,
                                                  const GatewayState* previous, std::vector<std::string>* warnings) {
    auto state = std::make_shared<GatewayState>();
    state->vaults = config_state.vaults;
    state->sessions = config_state.sessions;
    state->default_session = config_state.default_session;

    std::map<std::string, std::string, std::less<>> api_vault_names;  // id -> name
    for (const auto& stored : data.vaults) {
        // load() and reload refuse such a clash; data that did not pass through
        // them must still never shadow a config vault, which is code.
        if (state->vaults.count(stored.name)) continue;
        Vault vault;
        vault.id = stored.id;
        vault.name = stored.name;
        vault.from_config = false;
        for (const auto& c : stored.credentials)
            if (!c.value.empty()) vault.credentials.emplace(c.name, c.value);
        for (const auto& s : stored.services) vault.services.push_back(ServiceBinding{s.id, s.config, nullptr, {}});
        const Vault* before = nullptr;
        if (previous) {
            const auto it = previous->vaults.find(stored.name);
            if (it != previous->vaults.end() && it->second.id == stored.id) before = &it->second;
        }
        prepare_services(vault, warnings, before);
        api_vault_names.emplace(stored.id, stored.name);
        state->vaults.emplace(stored.name, std::move(vault));
    }

    const std::int64_t now_ms = admin::to_ms(now);
    for (const auto& stored : data.sessions) {
        if (stored.expires_at_ms <= now_ms) continue;
        Session session;
        session.id = stored.id;
        session.token_digest = stored.token_digest;
        session.expires_at = admin::from_ms(stored.expires_at_ms);
        session.source = stored.source;
        session.policy = admin::effective_policy(stored.policy, config);
        // Only ids of API vaults, and names of config vaults, are followed: an
        // API vault that later takes a departed config vault's name does not
        // inherit its sessions.
        for (const auto& id : stored.vault_ids) {
            if (const auto it = api_vault_names.find(id); it != api_vault_names.end()) {
                session.vault_names.push_back(it->second);
            } else if (const auto cv = config_state.vaults.find(id);
                       cv != config_state.vaults.end() && cv->second.from_config) {
                session.vault_names.push_back(id);
            }
        }
        // A config session of the same id keeps its place; API ids are random.
        state->sessions.emplace(stored.id, std::move(session));
    }
    return state;
}

}  // namespace vaultgate
