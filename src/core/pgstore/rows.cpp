#include "rows.hpp"

#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/egress/address.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace vaultgate::pg {

namespace {

using nlohmann::json;

std::string text(std::int64_t n) { return std::to_string(n); }

[[noreturn]] void damaged(const std::string& where, const std::string& why) {
    throw StoreError("database: damaged row " + where + ": " + why);
}

template <class T, class Key>
T* find_by(std::vector<T>& items, const Key& key, std::string T::*field) {
    auto it = std::find_if(items.begin(), items.end(), [&](const T& item) { return item.*field == key; });
    return it == items.end() ? nullptr : &*it;
}

StoredVault* vault_of(StoreData& data, const std::string& id) { return find_by(data.vaults, id, &StoredVault::id); }

template <class T>
void erase_by(std::vector<T>& items, const std::string& key, std::string T::*field) {
    std::erase_if(items, [&](const T& item) { return item.*field == key; });
}

// Replaces the item of the same key, or appends it: rows come in the order
// they were made, so new ones land where a full read puts them.
template <class T>
void upsert(std::vector<T>& items, T item, std::string T::*field) {
    if (auto* existing = find_by(items, item.*field, field))
        *existing = std::move(item);
    else
        items.push_back(std::move(item));
}

void apply_removals(Connection& conn, std::int64_t since, StoreData& data, std::vector<StoreChange>* changes) {
    const auto rows = conn.exec(
        "reading removals", "SELECT kind, vault_id, key FROM vaultgate_removals WHERE version > $1 ORDER BY version",
        {text(since)});
    // Sessions go in one pass at the end: many removals (an expiry sweep)
    // then cost one walk over the sessions, not one each.
    std::unordered_set<std::string> gone_sessions;
    for (int r = 0; r < rows.rows(); ++r) {
        const auto kind = rows.text(r, 0), vault_id = rows.text(r, 1), key = rows.text(r, 2);
        if (kind == "vault") {
            erase_by(data.vaults, key, &StoredVault::id);
            if (changes) changes->push_back({StoreChange::Kind::remove_vault, key});
        } else if (kind == "session") {
            gone_sessions.insert(key);
        } else if (auto* vault = vault_of(data, vault_id)) {
            if (kind == "credential") erase_by(vault->credentials, key, &StoredCredential::name);
            if (kind == "service") erase_by(vault->services, key, &StoredService::id);
            if (changes)
                changes->push_back({kind == "credential" ? StoreChange::Kind::remove_credential
                                                         : StoreChange::Kind::remove_service,
                                    vault_id, key});
        }
    }
    if (!gone_sessions.empty()) {
        std::erase_if(data.sessions, [&](const StoredSession& s) { return gone_sessions.count(s.id) > 0; });
        if (changes) {
            StoreChange removal{StoreChange::Kind::remove_sessions};
            removal.keys.assign(gone_sessions.begin(), gone_sessions.end());
            changes->push_back(std::move(removal));
        }
    }
}

void read_vaults(Connection& conn, std::int64_t since, StoreData& data, std::vector<StoreChange>* changes) {
    const auto rows = conn.exec(
        "reading vaults", "SELECT id, name, created_at_ms FROM vaultgate_vaults WHERE row_version > $1 ORDER BY seq",
        {text(since)});
    for (int r = 0; r < rows.rows(); ++r) {
        StoredVault vault;
        vault.id = rows.text(r, 0);
        vault.name = rows.text(r, 1);
        vault.created_at_ms = rows.number(r, 2);
        if (changes) changes->push_back({StoreChange::Kind::add_vault, vault.id});
        if (auto* existing = vault_of(data, vault.id)) {
            existing->name = vault.name;
            existing->created_at_ms = vault.created_at_ms;
        } else {
            data.vaults.push_back(std::move(vault));
        }
    }
}

void read_credentials(Connection& conn, const ValueSealer& sealer, std::int64_t since, StoreData& data,
                      std::vector<StoreChange>* changes) {
    const auto rows = conn.exec("reading credentials",
                                "SELECT vault_id, name, sealed_value, version, updated_at_ms FROM vaultgate_credentials"
                                " WHERE row_version > $1 ORDER BY seq",
                                {text(since)});
    for (int r = 0; r < rows.rows(); ++r) {
        const auto vault_id = rows.text(r, 0);
        StoredCredential credential;
        credential.name = rows.text(r, 1);
        auto sealed = rows.text(r, 2);
        credential.value = sealer.open(sealed, credential_context(vault_id, credential.name));
        credential.version = static_cast<std::uint64_t>(rows.number(r, 3));
        credential.updated_at_ms = rows.number(r, 4);
        auto* vault = vault_of(data, vault_id);
        if (!vault) damaged("credential " + credential.name, "its vault " + vault_id + " is missing");
        if (changes) changes->push_back({StoreChange::Kind::rotate_credential, vault_id, credential.name});
        upsert(vault->credentials, std::move(credential), &StoredCredential::name);
    }
}

void read_services(Connection& conn, std::int64_t since, StoreData& data, std::vector<StoreChange>* changes) {
    const auto rows = conn.exec(
        "reading services", "SELECT id, vault_id, config FROM vaultgate_services WHERE row_version > $1 ORDER BY seq",
        {text(since)});
    // Where each held service is (as for sessions below: no search per row).
    // Indexes, not pointers: an append may move a vault's services.
    std::unordered_map<std::string, std::pair<StoredVault*, std::size_t>> held;
    if (rows.rows() > 0)
        for (auto& vault : data.vaults)
            for (std::size_t i = 0; i < vault.services.size(); ++i) held.emplace(vault.services[i].id, std::pair{&vault, i});
    for (int r = 0; r < rows.rows(); ++r) {
        StoredService service;
        service.id = rows.text(r, 0);
        const auto vault_id = rows.text(r, 1);
        JsonTextError error = JsonTextError::none;
        const auto tree = parse_json_text(rows.text(r, 2), &error);
        std::string why = "not JSON";
        auto config = error == JsonTextError::none ? service_from_json(tree, &why) : std::nullopt;
        if (!config) damaged("service " + service.id, why);
        service.config = std::move(*config);
        auto* vault = vault_of(data, vault_id);
        if (!vault) damaged("service " + service.id, "its vault " + vault_id + " is missing");
        if (changes) changes->push_back({StoreChange::Kind::add_service, vault_id, service.id});
        // A service never moves to another vault: its id is random and new.
        if (const auto it = held.find(service.id); it != held.end())
            it->second.first->services[it->second.second] = std::move(service);
        else
            vault->services.push_back(std::move(service));
    }
}

void read_sessions(Connection& conn, std::int64_t since, StoreData& data, std::vector<StoreChange>* changes) {
    const auto rows = conn.exec("reading sessions",
                                "SELECT id, token_digest, vault_ids, policy, policy_name, expires_at_ms, source,"
                                " created_at_ms FROM vaultgate_sessions WHERE row_version > $1 ORDER BY seq",
                                {text(since)});
    // Where each held session is, so that a row finds its place at once (a
    // search per row would make reading n sessions cost n squared).
    std::unordered_map<std::string, std::size_t> held;
    if (rows.rows() > 0) {
        held.reserve(data.sessions.size());
        for (std::size_t i = 0; i < data.sessions.size(); ++i) held.emplace(data.sessions[i].id, i);
    }
    data.sessions.reserve(data.sessions.size() + static_cast<std::size_t>(rows.rows()));
    for (int r = 0; r < rows.rows(); ++r) {
        StoredSession session;
        session.id = rows.text(r, 0);
        const auto where = "session " + session.id;
        session.token_digest = rows.text(r, 1);
        JsonTextError error = JsonTextError::none;
        const auto ids = parse_json_text(rows.text(r, 2), &error);
        if (error != JsonTextError::none || !ids.is_array()) damaged(where, "vault_ids is not a JSON list");
        for (const auto& id : ids) {
            if (!id.is_string()) damaged(where, "vault_ids holds a non-string");
            session.vault_ids.push_back(id.get<std::string>());
        }
        const auto policy_tree = parse_json_text(rows.text(r, 3), &error);
        std::string why = "the policy is not JSON";
        auto policy = error == JsonTextError::none ? policy_from_json(policy_tree, &why) : std::nullopt;
        if (!policy) damaged(where, why);
        session.policy = std::move(*policy);
        session.policy.name = rows.text(r, 4);
        session.expires_at_ms = rows.number(r, 5);
        if (!rows.null(r, 6)) {
            session.source = parse_cidr(rows.text(r, 6));
            if (!session.source) damaged(where, "source is not a CIDR");
        }
        session.created_at_ms = rows.number(r, 7);
        if (changes) changes->push_back({StoreChange::Kind::add_session, {}, session.id});
        if (const auto it = held.find(session.id); it != held.end()) {
            data.sessions[it->second] = std::move(session);
        } else {
            held.emplace(session.id, data.sessions.size());
            data.sessions.push_back(std::move(session));
        }
    }
}

}  // namespace

std::string credential_context(std::string_view vault_id, std::string_view name) {
    return "vaultgate credential\n" + std::string(vault_id) + "\n" + std::string(name);
}

void read_changes(Connection& conn, const ValueSealer& sealer, std::int64_t since, StoreData& data,
                  std::vector<StoreChange>* changes) {
    if (since > 0) apply_removals(conn, since, data, changes);
    read_vaults(conn, since, data, changes);
    read_credentials(conn, sealer, since, data, changes);
    read_services(conn, since, data, changes);
    read_sessions(conn, since, data, changes);
}

void write_vault(Connection& conn, const StoredVault& vault, std::int64_t version) {
    conn.exec("saving a vault",
              "INSERT INTO vaultgate_vaults (id, name, created_at_ms, row_version) VALUES ($1, $2, $3, $4)"
              " ON CONFLICT (id) DO UPDATE SET name = $2, created_at_ms = $3, row_version = $4",
              {vault.id, vault.name, text(vault.created_at_ms), text(version)});
}

void write_credential(Connection& conn, const ValueSealer& sealer, const std::string& vault_id,
                      const StoredCredential& credential, std::int64_t version) {
    conn.exec("saving a credential",
              "INSERT INTO vaultgate_credentials (vault_id, name, sealed_value, version, updated_at_ms, row_version)"
              " VALUES ($1, $2, $3, $4, $5, $6)",
              {vault_id, credential.name, sealer.seal(credential.value, credential_context(vault_id, credential.name)),
               std::to_string(credential.version), text(credential.updated_at_ms), text(version)});
}

void write_service(Connection& conn, const std::string& vault_id, const StoredService& service, std::int64_t version) {
    conn.exec("saving a service",
              "INSERT INTO vaultgate_services (id, vault_id, config, row_version) VALUES ($1, $2, $3, $4)",
              {service.id, vault_id, service_to_json(service.config).dump(), text(version)});
}

void write_session(Connection& conn, const StoredSession& session, std::int64_t version) {
    std::optional<std::string> source;
    if (session.source) source = cidr_text(*session.source);
    conn.exec("saving a session",
              "INSERT INTO vaultgate_sessions (id, token_digest, vault_ids, policy, policy_name, expires_at_ms, source,"
              " created_at_ms, row_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
              {session.id, session.token_digest, json(session.vault_ids).dump(), policy_to_json(session.policy).dump(),
               session.policy.name, text(session.expires_at_ms), source, text(session.created_at_ms), text(version)});
}

}  // namespace vaultgate::pg
