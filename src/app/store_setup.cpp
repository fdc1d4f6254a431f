#include "store_setup.hpp"

#include "vaultgate/admin/admin_api.hpp"
#include "vaultgate/pgstore/pg_store.hpp"
#include "vaultgate/vault/store.hpp"

#include <chrono>

namespace vaultgate {

namespace {

// How often a replica reads the database without an announcement, for one
// lost with a connection.
constexpr std::chrono::milliseconds reread_period(5000);

}  // namespace

std::unique_ptr<VaultStore> open_configured_store(const Config& config, const Secret& master_key, bool allow_rollback) {
    if (!config.store_url)
        return guard_against_rollback(open_file_store(config.store_path, master_key),
                                      generation_record_path(config.store_path), allow_rollback);
    try {
        return open_pg_store(*config.store_url, master_key, PgStoreOptions{config.store_removals_retention});
    } catch (const StoreUnavailable& e) {
        throw StoreError(std::string("store.url: ") + e.what() +
                         "; a replica cannot start without its database (it has no snapshot to serve from)");
    }
}

std::shared_ptr<void> follow_store_changes(const Config& config, AdminApi& api) {
    if (!config.store_url) return nullptr;
    return std::make_shared<PgChangeListener>(
        *config.store_url, [&api] { api.refresh(); }, reread_period);
}

}  // namespace vaultgate
