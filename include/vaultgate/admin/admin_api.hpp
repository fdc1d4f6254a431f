#pragma once
// The admin API (docs/reference/admin-api.md) as a pure module: a parsed request in,
// a response out. No sockets and no Asio; the network layer checks the bearer
// token, calls handle(), and writes what comes back.
//
// It routes (router.hpp), checks bodies (request_body.hpp), changes the data
// through the catalog (catalog.hpp: save first, then publish a new snapshot)
// and renders answers (json_views.hpp); this class holds them together under
// one lock.
#include "vaultgate/admin/admin_http.hpp"
#include "vaultgate/admin/catalog.hpp"
#include "vaultgate/admin/endpoints.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/observe/access_log.hpp"
#include "vaultgate/observe/metrics.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate {

class AdminApi {
public:
    // `publish` is called with every new snapshot while the API's lock is held,
    // so that snapshots arrive in the order they were made; it must not call
    // back into this object. `log`, `metrics` and `metrics_extras` may be
    // null/empty (the endpoints then answer with empty data).
    AdminApi(Config config, std::unique_ptr<VaultStore> store, Secret master_key, AdminOptions options,
             std::function<void(std::shared_ptr<const GatewayState>)> publish, AccessLog* log, Metrics* metrics,
             std::function<MetricsExtras()> metrics_extras);
    ~AdminApi();
    AdminApi(const AdminApi&) = delete;
    AdminApi& operator=(const AdminApi&) = delete;

    // Loads the store (StoreError propagates), reads the config's credential
    // values, builds and publishes the first snapshot. Throws ConfigError when
    // a config vault has the name of an API vault, or a credential file cannot
    // be read.
    void load();

    // Thread-safe. The bearer token is NOT checked here: the caller does that.
    // Never throws; unexpected faults become a 500 without details.
    AdminResponse handle(const AdminRequest& req);

    // Drops the API sessions that expired by `now`, publishes, calls
    // on_session_closed for each and returns their ids.
    std::vector<std::string> expire_sessions(std::chrono::system_clock::time_point now);

    // A shared store: reads what other replicas changed and publishes it;
    // calls on_session_closed for each session that went and returns their
    // ids. Throws StoreUnavailable (the last snapshot stays in force).
    std::vector<std::string> refresh();

    // SIGHUP: replaces the config's vaults, sessions and policies and re-reads
    // their credential values; the API's data is kept. Throws ConfigError, and
    // keeps the running config, when the new one cannot be built or one of its
    // vault names is taken by an API vault.
    void reload_config(Config config);

    // The proxy address handed to sandboxes; set once the listener is bound
    // (its port is only known then when listen.proxy uses port 0).
    void set_proxy_url(std::string url);

    // Called, outside the lock, with the id of a session that was deleted or
    // expired, so that the network layer can close its connections. Set it
    // before the first call to handle().
    std::function<void(const std::string& session_id)> on_session_closed;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vaultgate
