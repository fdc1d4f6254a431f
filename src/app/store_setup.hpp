#pragma once
// The store `serve` runs with: the encrypted file, or the shared database
// with a listener that brings other replicas' changes in.
#include "vaultgate/config/config.hpp"
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/secret.hpp"

#include <functional>
#include <memory>

namespace vaultgate {

class AdminApi;

// store.url: the database (its schema migrated), else store.path guarded
// against rollback. Throws StoreError; a database out of reach at start is
// one, with a message saying so, since there is no snapshot to serve from.
std::unique_ptr<VaultStore> open_configured_store(const Config& config, const Secret& master_key, bool allow_rollback);

// For a database store: a listener that calls api.refresh() on every
// announced change and every few seconds (nullptr for the file store).
// Sessions found deleted get their connections closed through
// api.on_session_closed.
std::shared_ptr<void> follow_store_changes(const Config& config, AdminApi& api);

}  // namespace vaultgate
