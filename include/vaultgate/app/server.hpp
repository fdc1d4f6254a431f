#pragma once
// The running gateway: listeners, connection handling, upstream TLS. The
// interface keeps Asio out of the header so the CLI and tests that only drive
// it stay cheap to compile.
#include "vaultgate/admin/admin_http.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/observe/access_log.hpp"
#include "vaultgate/observe/metrics.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate {

class Server {
public:
    virtual ~Server() = default;

    // Binds every listener (throws std::runtime_error naming the address on
    // failure) and starts the worker threads. Returns once accepting.
    virtual void start() = 0;

    // Stops accepting, lets in-flight connections finish for up to `drain`,
    // then closes what is left. Idempotent; safe from any thread.
    virtual void stop(std::chrono::milliseconds drain) = 0;

    // Blocks until every worker thread has returned (after stop()).
    virtual void wait() = 0;

    // Actual bound ports (useful with port 0).
    virtual std::uint16_t proxy_port() const = 0;

    // A reload's share here: the upstream trust store and pins and the limits
    // for connections accepted from now on, and the access log reopened at
    // log.access. Throws std::runtime_error, changing nothing, when the new
    // upstream.ca_file or log.access cannot be opened.
    virtual void reload(const Config& config) = 0;

    // Swaps in a new snapshot of vaults, sessions and policies; the next request uses it.
    virtual void replace_state(std::shared_ptr<const GatewayState> state) = 0;
    virtual std::shared_ptr<const GatewayState> state() const = 0;

    virtual AccessLog& access_log() = 0;
    virtual Metrics& metrics() = 0;
    virtual std::uint16_t admin_port() const = 0;  // 0 for none or a unix socket
    // Closes every open connection of the session (after DELETE or expiry).
    virtual void close_session_connections(const std::string& session_id) = 0;
    // Each I/O thread frees the large blocks it has kept (block_cache.hpp)
    // and nobody reused for half a second. Returns at once; the threads do it
    // when they next run.
    virtual void release_idle_blocks() = 0;
    // What /metrics shows beside Metrics' own counters.
    virtual MetricsExtras metrics_extras() const = 0;
};

struct ServerOptions {
    unsigned threads = 0;  // 0 -> limits.worker_threads
    // Serves listen.admin when set. Runs on the admin listener's own thread, so
    // a slow store write never stalls proxy traffic.
    // The listener does HTTP and the bearer-token check; the handler the rest.
    std::function<AdminResponse(const AdminRequest&)> admin_handler;
    // Required for a TCP admin listener; a unix socket is protected by its mode (0600).
    std::optional<std::string> admin_token;
    // Called with the bound proxy port before the admin listener starts.
    std::function<void(std::uint16_t)> on_proxy_bound;
};

// Loads the CA and the upstream trust store named by config; throws
// std::runtime_error with a clear message when either is unusable.
std::unique_ptr<Server> make_server(const Config& config, std::shared_ptr<const GatewayState> state,
                                    ServerOptions options = {});

}  // namespace vaultgate
