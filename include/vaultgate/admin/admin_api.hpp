#pragma once
// The admin API (docs/reference/admin-api.md) as a pure module: a parsed request in,
// a response out. No sockets and no Asio; the network layer checks the bearer
// token, calls handle(), and writes what comes back.
//
// It owns the API's data (vaults, credentials, services and sessions made over
// HTTP) and the store they are saved in. Every change is saved first and then
// published as a new GatewayState snapshot, so the next proxied request sees it.
#include "vaultgate/observe/access_log.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/observe/metrics.hpp"
#include "vaultgate/util/secret.hpp"
#include "vaultgate/state/store.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vaultgate {

struct AdminRequest {
    std::string method;                         // "GET", "POST", ...
    std::string path;                           // "/v1/vaults/vlt_x/credentials", without the query
    std::map<std::string, std::string> query;   // decoded query parameters
    // May hold a credential value. handle() wipes its own copies; the caller
    // owns this string and should wipe it (wipe_string) once handle() returns.
    std::string body;
};

struct AdminResponse {
    int status = 200;
    std::string body;                           // empty for 204
    std::string content_type = "application/json";
    // Extra response headers, e.g. "Allow" on a 405.
    std::vector<std::pair<std::string, std::string>> headers;
};

struct AdminOptions {
    std::string proxy_url;                      // e.g. "http://127.0.0.1:3128"; empty -> from listen.proxy
    std::string ca_cert_pem;                    // handed to sandboxes in POST /v1/sessions
    std::chrono::seconds max_ttl{86400};        // upper bound of ttl_seconds
    std::size_t max_body = 1 << 20;             // larger request bodies get 413
};

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
