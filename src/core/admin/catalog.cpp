// The API's data and the save-then-publish cycle behind every change.
#include "vaultgate/admin/catalog.hpp"

#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace vaultgate::admin {

namespace {

using sys_clock = std::chrono::system_clock;

std::string source_prefix(const Config& config) {
    return config.source_path.empty() ? std::string() : config.source_path + ": ";
}

// The first session of `state` with two bindings that tie, as "session
// <id>: <binding> and <binding> bind ...". Sessions with the same vaults are
// looked at once: many sessions share few sets of vaults.
std::optional<std::string> first_binding_tie(const GatewayState& state) {
    std::set<std::vector<std::string>> checked;
    for (const auto& [id, session] : state.sessions) {
        if (!checked.insert(session.vault_names).second) continue;
        if (auto tie = state.find_binding_tie(session))
            return "session " + id + ": " + tie->first + " and " + tie->second +
                   " bind the same host, port and path_prefix";
    }
    return std::nullopt;
}

// The snapshot is keyed by vault name, so a config vault and an API vault
// of one name cannot both be served.
void check_vault_names(const Config& config, const StoreData& data) {
    for (const auto& vc : config.vaults)
        for (const auto& v : data.vaults)
            if (v.name == vc.name)
                throw ConfigError(source_prefix(config) + "vaults: '" + vc.name +
                                  "' is already the name of a vault made through the admin API (" + v.id +
                                  "); rename one of them");
}

}  // namespace

Catalog::Catalog(Config config, std::unique_ptr<VaultStore> store, Secret master_key, Publish publish)
    : config_(std::move(config)),
      store_(std::move(store)),
      master_key_(std::move(master_key)),
      publish_(std::move(publish)),
      config_state_(std::make_shared<GatewayState>()) {}

std::shared_ptr<const GatewayState> Catalog::build_config_state(const Config& config) {
    std::vector<std::string> warnings;
    auto state = build_state(config, warnings);
    for (const auto& w : warnings) log_warn(w);
    return state;
}

void Catalog::load() {
    StoreData data = store_->load();
    auto config_state = build_config_state(config_);
    check_vault_names(config_, data);
    std::vector<std::string> warnings;
    auto state = compose_state(*config_state, config_, data, sys_clock::now(), nullptr, &warnings);
    for (const auto& w : warnings) log_warn(w);
    // Stored before such ties were refused: requests they match are refused
    // (binding_conflict) until the session or a binding goes.
    if (auto tie = first_binding_tie(*state))
        log_warn("admin API: " + *tie + "; requests that match both are refused");
    data_ = std::move(data);
    config_state_ = std::move(config_state);
    config_loaded_ms_ = to_ms(sys_clock::now());
    loaded_ = true;
    publish_state(std::move(state));
}

void Catalog::reload(Config config, std::shared_ptr<const GatewayState> config_state) {
    check_vault_names(config, data_);
    if (loaded_)
        if (auto tie = first_binding_tie(*compose_state(*config_state, config, data_, sys_clock::now())))
            throw ConfigError(source_prefix(config) + *tie + "; the config is not reloaded");
    config_ = std::move(config);
    config_state_ = std::move(config_state);
    config_loaded_ms_ = to_ms(sys_clock::now());
    if (loaded_) publish(sys_clock::now());
}

std::vector<std::string> Catalog::expire(sys_clock::time_point now) {
    std::vector<std::string> expired;
    if (!loaded_) return expired;
    const std::int64_t now_ms = to_ms(now);
    for (const auto& s : data_.sessions)
        if (s.expires_at_ms <= now_ms) expired.push_back(s.id);
    // The common tick finds nothing, and changes nothing.
    if (expired.empty()) return expired;
    // The sessions are over whether or not the store takes the change:
    // compose_state leaves expired sessions out, also after a restart.
    const std::uint64_t before = data_.generation;
    std::erase_if(data_.sessions, [&](const StoredSession& s) { return s.expires_at_ms <= now_ms; });
    data_.generation = before + 1;
    StoreChange change{StoreChange::Kind::remove_sessions};
    change.keys = expired;
    std::uint64_t stored = data_.generation;
    try {
        stored = store_->apply(change, data_);
    } catch (const StoreUnavailable&) {
        // A shared store that is down: another replica, or this one once it
        // is back, deletes them; the version stays the one read last.
        stored = before;
    } catch (const StoreError& e) {
        // The next successful save drops them from the file (a file store
        // saves whole a change that does not follow what it holds).
        log_error(std::string("admin API: expired sessions stay in the store until the next save: ") + e.what());
    }
    // Another writer in between, or the sessions already gone from a shared
    // store: the version stays the one read last, and the store is read again.
    if (stored != data_.generation) data_.generation = before;
    publish_state(compose_change(*published_, *config_state_, config_, data_, change, now, nullptr));
    if (stored != data_.generation) {
        try {
            refresh();
        } catch (const StoreError&) {
        }
    }
    return expired;
}

std::optional<Catalog::VaultRef> Catalog::find_vault(std::string_view id_or_name) const {
    // Ids first: an API vault may be named like another vault's id, and the id
    // must keep naming the vault it was handed out for.
    for (std::size_t i = 0; i < data_.vaults.size(); ++i)
        if (data_.vaults[i].id == id_or_name) return VaultRef{&data_.vaults[i], i, nullptr};
    for (const auto& vc : config_.vaults)
        if (vc.name == id_or_name) return VaultRef{nullptr, 0, &vc};
    for (std::size_t i = 0; i < data_.vaults.size(); ++i)
        if (data_.vaults[i].name == id_or_name) return VaultRef{&data_.vaults[i], i, nullptr};
    return std::nullopt;
}

Catalog::VaultRef Catalog::known_vault(std::string_view id_or_name) const {
    const auto ref = find_vault(id_or_name);
    if (!ref) fail(404, "unknown_vault", "no vault with this id or name");
    return *ref;
}

std::size_t Catalog::writable_vault(std::string_view id) const {
    const auto ref = known_vault(id);
    if (ref.config)
        fail(409, "read_only", "vault '" + ref.config->name + "' is defined in the config file; change it there");
    return ref.index;
}

std::size_t Catalog::credential_index(std::size_t vault, std::string_view name) const {
    const auto& credentials = data_.vaults[vault].credentials;
    for (std::size_t i = 0; i < credentials.size(); ++i)
        if (credentials[i].name == name) return i;
    fail(404, "credential_not_found", "the vault has no credential of this name");
}

void Catalog::remove_vault(std::size_t vault) {
    const StoredVault& doomed = data_.vaults[vault];
    // A live session would lose its credentials mid-run; it ends first, by
    // DELETE /v1/sessions/{id} or by expiring.
    const std::int64_t now_ms = to_ms(sys_clock::now());
    std::string users;
    std::size_t count = 0;
    for (const auto& s : data_.sessions) {
        if (s.expires_at_ms <= now_ms) continue;
        if (std::find(s.vault_ids.begin(), s.vault_ids.end(), doomed.id) == s.vault_ids.end()) continue;
        users += (count++ ? ", " : "") + s.id;
    }
    if (count)
        fail(409, "vault_in_use",
             "vault '" + doomed.name + "' is used by " + std::to_string(count) +
                 (count == 1 ? " live session (" : " live sessions (") + users +
                 "); delete them or wait until they expire");

    const StoreChange change{StoreChange::Kind::remove_vault, doomed.id};
    const auto at = data_.vaults.begin() + static_cast<std::ptrdiff_t>(vault);
    auto kept = std::make_shared<StoredVault>(std::move(*at));
    data_.vaults.erase(at);
    commit(change, [&, kept] {
        data_.vaults.insert(data_.vaults.begin() + static_cast<std::ptrdiff_t>(vault), std::move(*kept));
    });
}

StoredVault Catalog::add_vault(std::string name) {
    const auto taken = [&](const auto& v) { return v.name == name; };
    if (std::any_of(config_.vaults.begin(), config_.vaults.end(), taken) ||
        std::any_of(data_.vaults.begin(), data_.vaults.end(), taken))
        fail(409, "name_taken", "a vault named '" + name + "' already exists");

    StoredVault vault;
    vault.id = random_id("vlt_");
    vault.name = std::move(name);
    vault.created_at_ms = to_ms(sys_clock::now());
    data_.vaults.push_back(vault);
    commit({StoreChange::Kind::add_vault, vault.id}, [&] { data_.vaults.pop_back(); });
    return vault;
}

void Catalog::add_credential(std::size_t vault, std::string name, Secret value) {
    for (const auto& c : data_.vaults[vault].credentials)
        if (c.name == name) fail(409, "credential_exists", "credential '" + name + "' exists; rotate it with PUT");

    StoredCredential credential;
    credential.name = std::move(name);
    credential.value = std::move(value);
    credential.version = 1;
    credential.updated_at_ms = to_ms(sys_clock::now());
    const StoreChange change{StoreChange::Kind::add_credential, data_.vaults[vault].id, credential.name};
    data_.vaults[vault].credentials.push_back(std::move(credential));
    commit(change, [&] { data_.vaults[vault].credentials.pop_back(); });
}

std::uint64_t Catalog::rotate_credential(std::size_t vault, std::size_t credential, Secret value) {
    StoredCredential& c = data_.vaults[vault].credentials[credential];
    StoreChange change{StoreChange::Kind::rotate_credential, data_.vaults[vault].id, c.name};
    change.expected_version = c.version;
    auto old = std::make_shared<StoredCredential>(c);
    c.value = std::move(value);
    c.version += 1;
    c.updated_at_ms = to_ms(sys_clock::now());
    const std::uint64_t version = c.version;
    // Saved and published before the answer: the next proxied request uses the new value.
    commit(change, [&, old] { data_.vaults[vault].credentials[credential] = std::move(*old); });
    return version;
}

void Catalog::remove_credential(std::size_t vault, std::string_view name) {
    const std::size_t ci = credential_index(vault, name);
    // A service left without its credential would answer 503 to every
    // request; the caller removes the binding first, on purpose.
    for (const auto& s : data_.vaults[vault].services)
        for (const auto& used : s.config.auth.credential_names())
            if (used == name)
                fail(409, "credential_in_use",
                     "service " + s.id + " uses this credential; delete the service first");

    auto& credentials = data_.vaults[vault].credentials;
    const auto at = credentials.begin() + static_cast<std::ptrdiff_t>(ci);
    auto kept = std::make_shared<StoredCredential>(std::move(*at));
    credentials.erase(at);
    commit({StoreChange::Kind::remove_credential, data_.vaults[vault].id, std::string(name)}, [&, kept] {
        data_.vaults[vault].credentials.insert(data_.vaults[vault].credentials.begin() + static_cast<std::ptrdiff_t>(ci),
                                               std::move(*kept));
    });
}

StoredService Catalog::add_service(std::size_t vault, ServiceConfig config) {
    const auto& credentials = data_.vaults[vault].credentials;
    for (const auto& field : config.auth.credential_fields()) {
        const bool known = std::any_of(credentials.begin(), credentials.end(),
                                       [&](const StoredCredential& c) { return c.name == field.name; });
        if (!known)
            fail(400, "unknown_credential",
                 "auth_config." + std::string(field.auth_key) +
                     ": the vault has no credential of that name; create it first");
    }

    for (const auto& other : data_.vaults[vault].services)
        if (other.config.same_binding(config))
            fail(409, "binding_conflict",
                 "service " + other.id + " of this vault already binds " + config.host + ":" +
                     std::to_string(config.port) + " " + config.path_prefix + " (the same host, port and path_prefix)");

    StoredService service;
    service.id = random_id("svc_");
    service.config = std::move(config);
    data_.vaults[vault].services.push_back(service);
    commit({StoreChange::Kind::add_service, data_.vaults[vault].id, service.id},
           [&] { data_.vaults[vault].services.pop_back(); });
    return service;
}

void Catalog::remove_service(std::size_t vault, std::string_view service_id) {
    auto& services = data_.vaults[vault].services;
    const auto it =
        std::find_if(services.begin(), services.end(), [&](const StoredService& s) { return s.id == service_id; });
    if (it == services.end()) fail(404, "service_not_found", "the vault has no service with this id");
    const auto index = it - services.begin();
    auto kept = std::make_shared<StoredService>(std::move(*it));
    services.erase(it);
    commit({StoreChange::Kind::remove_service, data_.vaults[vault].id, std::string(service_id)}, [&, kept, index] {
        data_.vaults[vault].services.insert(data_.vaults[vault].services.begin() + index, std::move(*kept));
    });
}

void Catalog::add_session(const StoredSession& session) {
    refuse_source_overlap(session);
    data_.sessions.push_back(session);
    commit({StoreChange::Kind::add_session, {}, session.id}, [&] { data_.sessions.pop_back(); });
}

std::string Catalog::remove_session(std::string_view id) {
    const auto it =
        std::find_if(data_.sessions.begin(), data_.sessions.end(), [&](const StoredSession& s) { return s.id == id; });
    if (it == data_.sessions.end()) {
        if (config_.sessions.count(std::string(id)))
            fail(409, "read_only", "session '" + std::string(id) + "' is defined in the config file");
        fail(404, "session_not_found", "no session with this id");
    }
    const auto index = it - data_.sessions.begin();
    auto kept = std::make_shared<StoredSession>(std::move(*it));
    data_.sessions.erase(it);
    StoreChange change{StoreChange::Kind::remove_sessions};
    change.keys = {kept->id};
    commit(change, [&, kept, index] { data_.sessions.insert(data_.sessions.begin() + index, std::move(*kept)); });
    return change.keys.front();
}

// A transparent client is given the session with the narrowest source
// range that holds it; two live sessions with one range could not be told apart.
void Catalog::refuse_source_overlap(const StoredSession& session) const {
    if (!session.source) return;
    const std::int64_t now_ms = to_ms(sys_clock::now());
    for (const auto& other : data_.sessions)
        if (other.source && other.expires_at_ms > now_ms && same_source_range(*other.source, *session.source))
            fail(409, "source_conflict",
                 "source: session " + other.id +
                     " is already pinned to this range; pick a narrower or "
                     "another one, or delete that session first");
}

// Refuses a change after which a session of `next` (the snapshot it would
// make) would hold two bindings that no rule of specificity can choose
// between. Only the sessions the change touches are looked at: the new
// session, or, for a new service, the sessions of its vault, and those only
// when another service already binds what it binds.
void Catalog::refuse_binding_ties(const GatewayState& next, const StoreChange& change) const {
    const auto refuse = [](const BindingTie& tie) {
        fail(409, "binding_conflict",
             tie.first + " and " + tie.second +
                 " bind the same host, port and path_prefix for one session; change one path_prefix, "
                 "or use the vaults in different sessions");
    };
    if (change.kind == StoreChange::Kind::add_session) {
        if (const Session* session = next.find_session(change.key))
            if (auto tie = next.find_binding_tie(*session)) refuse(*tie);
        return;
    }
    if (change.kind != StoreChange::Kind::add_service) return;
    const Vault* vault = nullptr;
    const ServiceBinding* added = nullptr;
    for (const auto& [name, v] : next.vaults)
        for (const auto& s : v.services)
            if (!v.from_config && v.id == change.vault_id && s.id == change.key) vault = &v, added = &s;
    if (!added) return;
    bool twin = false;
    for (const auto& [name, v] : next.vaults)
        for (const auto& s : v.services)
            if (&s != added && s.config.same_binding(added->config)) twin = true;
    if (!twin) return;
    std::set<std::vector<std::string>> checked;
    for (const auto& [id, session] : next.sessions) {
        if (std::find(session.vault_names.begin(), session.vault_names.end(), vault->name) ==
            session.vault_names.end())
            continue;
        if (!checked.insert(session.vault_names).second) continue;
        if (auto tie = next.find_binding_tie(session)) refuse(*tie);
    }
}

// Saves `change` (already made in data_), then publishes the snapshot it
// makes. A refused or failed change is taken back, so memory and store never
// disagree. When another replica wrote in between, the store is read again
// instead, which brings both changes.
void Catalog::commit(const StoreChange& change, const std::function<void()>& undo) {
    const std::uint64_t before = data_.generation;
    const auto take_back = [&] {
        undo();
        data_.generation = before;
    };
    data_.generation = before + 1;
    std::vector<std::string> warnings;
    std::shared_ptr<const GatewayState> next;
    std::uint64_t stored = 0;
    try {
        next = published_ ? compose_change(*published_, *config_state_, config_, data_, change, sys_clock::now(),
                                           &warnings)
                          : compose_state(*config_state_, config_, data_, sys_clock::now(), nullptr, &warnings);
        refuse_binding_ties(*next, change);
        stored = store_->apply(change, data_);
    } catch (const StoreUnavailable& e) {
        take_back();
        log_error(std::string("admin API: change not saved: ") + e.what());
        fail(503, "store_unavailable", "the store cannot be reached; nothing was changed, try again later");
    } catch (const StoreConflict& e) {
        take_back();
        // The other writer's change is read now, so that a retry sees it.
        try {
            refresh();
        } catch (const StoreError&) {
        }
        fail(409, e.code, e.what());
    } catch (const StoreError& e) {
        take_back();
        log_error(std::string("admin API: change not saved: ") + e.what());
        fail(500, "store_write_failed", "the change could not be saved; nothing was changed");
    } catch (...) {
        take_back();  // a refusal (ApiError) or an unexpected fault
        throw;
    }
    if (stored == data_.generation) {
        for (const auto& w : warnings) log_warn(w);
        publish_state(std::move(next));
        return;
    }
    // Saved among others' changes: read from the version before, which
    // brings this change's rows back too.
    data_.generation = before;
    try {
        refresh();
    } catch (const StoreError& e) {
        // Saved, but not read back: the periodic re-read brings it.
        log_warn(std::string("admin API: change saved, re-reading the store failed: ") + e.what());
    }
}

// In place, and published change by change from the last snapshot: a
// replica takes in another's change at the cost of that change (the
// announcement of its own costs one query). A store read whole, or a large
// batch, is composed whole.
bool Catalog::refresh() {
    if (!loaded_) return false;
    VaultStore::Refresh read;
    if (!store_->refresh(data_, &read)) return false;
    const auto now = sys_clock::now();
    if (read.whole) {
        std::unordered_set<std::string_view> kept;
        kept.reserve(data_.sessions.size());
        for (const auto& s : data_.sessions) kept.insert(s.id);
        for (const auto& [id, s] : published_->sessions)
            if (!s.token_digest.empty() && !kept.count(id)) gone_sessions_.push_back(id);
        publish(now);
        return true;
    }
    for (const auto& change : read.changes)
        if (change.kind == StoreChange::Kind::remove_sessions)
            for (const auto& id : change.keys)
                if (published_->find_session(id)) gone_sessions_.push_back(id);
    constexpr std::size_t largest_batch = 256;
    if (read.changes.size() > largest_batch) {
        publish(now);
        return true;
    }
    std::vector<std::string> warnings;
    auto state = published_;
    for (const auto& change : read.changes)
        state = compose_change(*state, *config_state_, config_, data_, change, now, &warnings);
    for (const auto& w : warnings) log_warn(w);
    publish_state(std::move(state));
    return true;
}

std::vector<std::string> Catalog::take_gone_sessions() {
    std::vector<std::string> gone;
    gone.swap(gone_sessions_);
    return gone;
}

void Catalog::publish(sys_clock::time_point now) {
    // Redaction tables of unchanged API services are taken over from the
    // last state; only new or changed ones are built (and warned about).
    std::vector<std::string> warnings;
    auto state = compose_state(*config_state_, config_, data_, now, published_.get(), &warnings);
    for (const auto& w : warnings) log_warn(w);
    publish_state(std::move(state));
}

void Catalog::publish_state(std::shared_ptr<const GatewayState> state) {
    published_ = state;
    if (publish_) publish_(std::move(state));
}

}  // namespace vaultgate::admin
