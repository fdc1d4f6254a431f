// The snapshot the proxy decides with, from the config's state and the API's data.
#include "vaultgate/admin/catalog.hpp"

#include <algorithm>
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

// An API vault as the snapshot holds it; `before` (the same vault in the
// last snapshot) lends its redaction tables to unchanged services.
Vault compose_vault(const StoredVault& stored, const Vault* before, std::vector<std::string>* warnings) {
    Vault vault;
    vault.id = stored.id;
    vault.name = stored.name;
    vault.from_config = false;
    for (const auto& c : stored.credentials)
        if (!c.value.empty()) vault.credentials.emplace(c.name, c.value);
    for (const auto& s : stored.services) vault.services.push_back(ServiceBinding{s.id, s.config, nullptr, {}});
    prepare_services(vault, warnings, before);
    return vault;
}

const Vault* same_vault_in(const GatewayState* previous, const StoredVault& stored) {
    if (!previous) return nullptr;
    const auto it = previous->vaults.find(stored.name);
    return it != previous->vaults.end() && it->second.id == stored.id ? &it->second : nullptr;
}

// `api_vault_name(id)`: the name of the API vault with that id in the
// snapshot, or null.
template <class ApiVaultName>
Session compose_session(const StoredSession& stored, const Config& config, const GatewayState& config_state,
                        const ApiVaultName& api_vault_name) {
    Session session;
    session.id = stored.id;
    session.token_digest = stored.token_digest;
    session.expires_at = from_ms(stored.expires_at_ms);
    session.source = stored.source;
    session.policy = effective_policy(stored.policy, config);
    // Only ids of API vaults, and names of config vaults, are followed: an
    // API vault that later takes a departed config vault's name does not
    // inherit its sessions.
    for (const auto& id : stored.vault_ids) {
        if (const std::string* name = api_vault_name(id)) {
            session.vault_names.push_back(*name);
        } else if (const auto cv = config_state.vaults.find(id);
                   cv != config_state.vaults.end() && cv->second.from_config) {
            session.vault_names.push_back(id);
        }
    }
    return session;
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
        api_vault_names.emplace(stored.id, stored.name);
        state->vaults.emplace(stored.name,
                              admin::compose_vault(stored, admin::same_vault_in(previous, stored), warnings));
    }

    const auto name_of = [&](const std::string& id) -> const std::string* {
        const auto it = api_vault_names.find(id);
        return it == api_vault_names.end() ? nullptr : &it->second;
    };
    const std::int64_t now_ms = admin::to_ms(now);
    for (const auto& stored : data.sessions) {
        if (stored.expires_at_ms <= now_ms) continue;
        // A config session of the same id keeps its place; API ids are random.
        state->sessions.emplace(stored.id, admin::compose_session(stored, config, config_state, name_of));
    }
    return state;
}

std::shared_ptr<const GatewayState> compose_change(const GatewayState& previous, const GatewayState& config_state,
                                                   const Config& config, const StoreData& data,
                                                   const StoreChange& change,
                                                   std::chrono::system_clock::time_point now,
                                                   std::vector<std::string>* warnings) {
    using Kind = StoreChange::Kind;
    // Shares every shard of vaults and sessions; a change copies the one it touches.
    auto state = std::make_shared<GatewayState>(previous);
    const auto stored_vault = [&](std::string_view id) -> const StoredVault* {
        for (const auto& v : data.vaults)
            if (v.id == id) return &v;
        return nullptr;
    };
    switch (change.kind) {
        case Kind::remove_vault:
            for (const auto& [name, vault] : previous.vaults)
                if (!vault.from_config && vault.id == change.vault_id) {
                    state->vaults.erase(name);
                    break;
                }
            break;
        case Kind::add_vault:
        case Kind::add_credential:
        case Kind::rotate_credential:
        case Kind::remove_credential:
        case Kind::add_service:
        case Kind::remove_service: {
            const StoredVault* stored = stored_vault(change.vault_id);
            if (!stored) break;
            // As compose_state: never in place of a config vault.
            if (const auto cv = config_state.vaults.find(stored->name); cv != config_state.vaults.end()) break;
            state->vaults.insert_or_assign(stored->name,
                                           admin::compose_vault(*stored, admin::same_vault_in(&previous, *stored),
                                                                warnings));
            break;
        }
        case Kind::add_session: {
            const auto it = std::find_if(data.sessions.rbegin(), data.sessions.rend(),
                                         [&](const StoredSession& s) { return s.id == change.key; });
            if (it == data.sessions.rend() || it->expires_at_ms <= admin::to_ms(now)) break;
            const auto name_of = [&](const std::string& id) -> const std::string* {
                const StoredVault* v = stored_vault(id);
                if (!v || config_state.vaults.count(v->name)) return nullptr;
                return &v->name;
            };
            state->sessions.emplace(it->id, admin::compose_session(*it, config, config_state, name_of));
            break;
        }
        case Kind::remove_sessions:
            // A config session of the same id was never replaced by an API one.
            for (const auto& id : change.keys)
                if (!config_state.sessions.count(id)) state->sessions.erase(id);
            break;
    }
    return state;
}

}  // namespace vaultgate
