#pragma once
// The admin API's data (vaults, credentials, services and sessions made over
// HTTP) beside the config's, and every change to it. A change is saved to the
// store first and then published as a new GatewayState snapshot, so the next
// proxied request sees it; a failed save changes nothing in memory.
//
// Not thread-safe: AdminApi holds its lock around every call.
#include "vaultgate/config/config.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/crypto/ids.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/secret.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate {

// The snapshot the proxy decides with: the config's vaults and sessions as
// build_state() made them (`config_state`), plus the API's vaults and its
// sessions that are not expired at `now`. API sessions name their vaults by id
// (API vaults) or by name (config vaults); the snapshot holds names. A session
// whose policy was named after a config policy gets that policy as `config`
// defines it now, so that a reload which tightens a policy tightens the live
// sessions too; a name the config no longer has gives a deny-all policy.
// `previous` (the last published snapshot) lends its redaction tables to API
// services whose inputs did not change; `warnings` gets a line (names only)
// for each new table that cannot be built.
std::shared_ptr<const GatewayState> compose_state(const GatewayState& config_state, const Config& config,
                                                  const StoreData& data, std::chrono::system_clock::time_point now,
                                                  const GatewayState* previous = nullptr,
                                                  std::vector<std::string>* warnings = nullptr);

// The snapshot after one `change`, made from `previous` (the snapshot of the
// data before it) and `data` (after it): the change's vault or sessions are
// built again and everything else is shared with or copied from `previous`,
// so a session made or revoked costs the same with a hundred thousand
// sessions as with ten. What compose_state() would give for `data`, except
// that sessions expired since `previous` stay until the next sweep (requests
// check the expiry themselves).
std::shared_ptr<const GatewayState> compose_change(const GatewayState& previous, const GatewayState& config_state,
                                                   const Config& config, const StoreData& data,
                                                   const StoreChange& change,
                                                   std::chrono::system_clock::time_point now,
                                                   std::vector<std::string>* warnings);

namespace admin {

std::int64_t to_ms(std::chrono::system_clock::time_point tp);

// What a session gets when it names no policy and the config has no "default":
// nothing leaves except through its bound services.
EgressPolicy deny_all_policy();

class Catalog {
public:
    using Publish = std::function<void(std::shared_ptr<const GatewayState>)>;

    Catalog(Config config, std::unique_ptr<VaultStore> store, Secret master_key, Publish publish);

    // The config's vaults and sessions with their credential values read; warns
    // (names only) about what cannot be built. Throws ConfigError.
    static std::shared_ptr<const GatewayState> build_config_state(const Config& config);

    // Loads the store (StoreError propagates) and publishes the first snapshot.
    // Throws ConfigError when a config vault has the name of an API vault.
    void load();
    // Replaces the config; `config_state` is build_config_state(config). Throws
    // ConfigError, keeping the running config, when a vault name is taken by an
    // API vault or the change makes two bindings of a session tie.
    void reload(Config config, std::shared_ptr<const GatewayState> config_state);
    // Drops the sessions expired by `now`, publishes, and returns their ids.
    std::vector<std::string> expire(std::chrono::system_clock::time_point now);
    // Reads what other replicas changed in a shared store (VaultStore::refresh)
    // and publishes when something did (returns true then). Throws
    // StoreUnavailable.
    bool refresh();
    // The sessions that refresh() found deleted since the last call, whose
    // connections are to be closed.
    std::vector<std::string> take_gone_sessions();
    bool store_available() const { return store_->available(); }

    bool loaded() const { return loaded_; }
    const Config& config() const { return config_; }
    const StoreData& data() const { return data_; }
    const GatewayState& config_state() const { return *config_state_; }
    std::int64_t config_loaded_ms() const { return config_loaded_ms_; }
    const Secret& master_key() const { return master_key_; }

    struct VaultRef {
        const StoredVault* api = nullptr;
        std::size_t index = 0;  // into data().vaults when api is set
        const VaultConfig* config = nullptr;
    };
    // A vault by id (an API vault's id, a config vault's name), else an API
    // vault by name: wherever the API takes a vault id, a name works too.
    std::optional<VaultRef> find_vault(std::string_view id_or_name) const;
    // find_vault(), or 404 unknown_vault.
    VaultRef known_vault(std::string_view id_or_name) const;
    // The index of an API vault that may be changed (404, or 409 for a config vault).
    std::size_t writable_vault(std::string_view id_or_name) const;
    // The index of the credential `name` of API vault `vault` (404 when absent).
    std::size_t credential_index(std::size_t vault, std::string_view name) const;

    // The changes. Each checks what only the data can tell (ApiError),
    // commits and publishes. `vault` is an index from writable_vault().
    StoredVault add_vault(std::string name);
    // Refused (409 vault_in_use) while an unexpired session names the vault.
    void remove_vault(std::size_t vault);
    void add_credential(std::size_t vault, std::string name, Secret value);
    // Returns the credential's new version.
    std::uint64_t rotate_credential(std::size_t vault, std::size_t credential, Secret value);
    void remove_credential(std::size_t vault, std::string_view name);
    StoredService add_service(std::size_t vault, ServiceConfig config);
    void remove_service(std::size_t vault, std::string_view service_id);
    void add_session(const StoredSession& session);
    // Returns the id of the session removed.
    std::string remove_session(std::string_view id);

private:
    // data_ has been edited in place to hold `change`; `undo` takes the edit
    // back. Builds the next snapshot, refuses a binding tie the change would
    // make, saves the change and publishes; on any failure data_ is as before.
    void commit(const StoreChange& change, const std::function<void()>& undo);
    void publish(std::chrono::system_clock::time_point now);
    void publish_state(std::shared_ptr<const GatewayState> state);
    void refuse_source_overlap(const StoredSession& session) const;
    void refuse_binding_ties(const GatewayState& next, const StoreChange& change) const;

    Config config_;
    std::unique_ptr<VaultStore> store_;
    Secret master_key_;
    Publish publish_;
    std::shared_ptr<const GatewayState> published_;  // the last state handed to publish_
    std::atomic<bool> loaded_ = false;  // read by /readyz without the API's lock
    StoreData data_;
    std::shared_ptr<const GatewayState> config_state_;  // the config's vaults and sessions, values read
    std::vector<std::string> gone_sessions_;
    std::int64_t config_loaded_ms_ = 0;
};

}  // namespace admin
}  // namespace vaultgate
