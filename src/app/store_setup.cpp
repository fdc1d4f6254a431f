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
    OpenSharedStore open_shared = [url = *config.store_url, master_key, options = PgStoreOptions{
                                                                             config.store_removals_retention}] {
        return open_pg_store(url, master_key, options);
    };
    if (config.store_snapshot_path)
        return with_local_snapshot(std::move(open_shared), master_key,
                                   LocalSnapshotOptions{*config.store_snapshot_path, config.store_snapshot_interval,
                                                        config.store_snapshot_max_age});
    try {
        return open_shared();
    } catch (const StoreUnavailable& e) {
        throw StoreError(std::string("store.url: ") + e.what() +
                         "; a replica cannot start without its database unless it keeps a local snapshot "
                         "(store.snapshot_path)");
    }
}

std::shared_ptr<void> follow_store_changes(const Config& config, AdminApi& api) {
    if (!config.store_url) return nullptr;
    return std::make_shared<PgChangeListener>(
        *config.store_url, [&api] { api.refresh(); }, reread_period);
}

}  // namespace vaultgate
