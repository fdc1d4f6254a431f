#pragma once
// The admin API's endpoints (docs/reference/admin-api.md), each a handler that
// checks the request body, asks the catalog for the change or the data, and
// renders the answer.
#include "vaultgate/admin/catalog.hpp"
#include "vaultgate/admin/router.hpp"
#include "vaultgate/observe/access_log.hpp"
#include "vaultgate/observe/metrics.hpp"
#include "vaultgate/state/session_ttl.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace vaultgate {

struct AdminOptions {
    std::string proxy_url;                // e.g. "http://127.0.0.1:3128"; empty -> from listen.proxy
    std::string ca_cert_pem;              // handed to sandboxes in POST /v1/sessions
    std::chrono::seconds max_ttl = max_session_ttl;  // upper bound of ttl_seconds
    std::size_t max_body = 1 << 20;       // larger request bodies get 413
};

namespace admin {

// What the handlers work with; owned by AdminApi, which outlives its routers.
struct EndpointContext {
    Catalog* catalog = nullptr;
    AdminOptions* options = nullptr;
    AccessLog* log = nullptr;    // may be null: no entries
    Metrics* metrics = nullptr;  // may be null: an empty page
    std::function<MetricsExtras()> metrics_extras;
};

// GET /healthz, GET /readyz and GET /metrics: served without the lock, before
// the store loads.
void add_open_routes(Router& router, const EndpointContext* context);
// /v1/vaults and everything under it.
void add_vault_routes(Router& router, const EndpointContext* context);
// /v1/sessions.
void add_session_routes(Router& router, const EndpointContext* context);
// /v1/logs.
void add_log_routes(Router& router, const EndpointContext* context);

}  // namespace admin
}  // namespace vaultgate
