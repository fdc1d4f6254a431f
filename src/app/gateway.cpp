// The gateway's wiring: config, CA, store, admin API and server, then the
// signal loop that reloads, expires sessions, trims memory and drains.
#include "vaultgate/app/gateway.hpp"

#include "reload.hpp"
#include "store_setup.hpp"

#include "vaultgate/admin/admin_api.hpp"
#include "vaultgate/app/preflight.hpp"
#include "vaultgate/app/sd_notify.hpp"
#include "vaultgate/app/server.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/crypto/ca.hpp"
#include "vaultgate/mem/block_cache.hpp"
#include "vaultgate/mem/trim_schedule.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/vault/store.hpp"

#include <malloc.h>
#include <pthread.h>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace vaultgate {

using cli::sd_notify_state;

namespace {

// Loads and validates; on error prints the file:line:col message and returns nullopt.
std::optional<Config> load_or_report(const std::string& path) {
    try {
        return load_config_file(path);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "vaultgate: %s\n", e.what());
        return std::nullopt;
    }
}

// The quick start runs on a fresh checkout: a missing CA (both files absent,
// with the usual names) is generated once. Anything else missing was reported
// by the pre-flight.
void ensure_ca(const Config& config) {
    if (!ca_created_on_start(config)) return;
    auto dir = std::filesystem::path(config.ca_cert).parent_path();
    create_ca_files(dir.empty() ? "." : dir.string(), "vaultgate proxy CA");
    log_info("generated a new proxy CA in " + (dir.empty() ? std::string(".") : dir.string()) +
             "; sandboxes must trust " + config.ca_cert);
}

// Prints the pre-flight's findings (warnings only with `warnings`); true when
// one of them is an error.
bool report(const Config& config, const std::vector<PreflightFinding>& findings, bool warnings) {
    bool failed = false;
    for (const auto& f : findings) {
        const bool error = f.severity == PreflightFinding::Severity::error;
        failed = failed || error;
        if (error || warnings) std::fprintf(stderr, "vaultgate: %s\n", describe(config, f).c_str());
    }
    return failed;
}

std::string read_file(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(what + ": cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The 1 s tick: expire sessions, free idle cached blocks, trim when due.
void on_tick(AdminApi& api, Server& server, TrimSchedule& trim) {
    api.expire_sessions(std::chrono::system_clock::now());
    // Give memory freed by closed or parked connections back to the
    // system, so a burst of connections does not leave the RSS high.
    const Metrics& metrics = server.metrics();
    // Blocks kept for new connections are freed once unused for
    // 0.5 s (so 0.5-1.5 s after, on this 1 s tick), whatever freed them (closed clients, or pooled upstream
    // connections the sweep closed with no client activity at all).
    if (block_cache::bytes_held_by_all_threads() > 0) server.release_idle_blocks();
    const std::uint64_t opened = metrics.connections_total();
    const std::uint64_t active = metrics.active_connections();
    const FreeCounts freed{opened > active ? opened - active : 0, metrics.requests_total(),
                           block_cache::blocks_freed_by_all_threads()};
    if (trim.due(freed)) malloc_trim(0);
}

// SIGHUP: a new config replaces what can change without a new socket
// (apply_reload); a bad one changes nothing.
void reload(const std::string& path, const ReloadTargets& targets, std::chrono::milliseconds& drain_timeout) {
    sd_notify_state("RELOADING=1");
    log_info("SIGHUP: reloading " + path);
    auto next = load_or_report(path);
    if (!next)
        log_error("reload refused: the new config is invalid; the running config stays");
    else if (apply_reload(*next, targets))
        drain_timeout = next->limits.drain_timeout;
    sd_notify_state("READY=1");
}

// SIGINT, SIGTERM: stop accepting and drain, while this thread waits for a
// second signal, which ends the process at once (docs/reference/cli.md,
// "Signals"). Returns the exit code of a drain that ran to its end.
int drain_then_stop(Server& server, std::chrono::milliseconds drain_timeout) {
    sd_notify_state("STOPPING=1");
    log_info("draining connections, at most " + std::to_string(drain_timeout.count()) + " ms");
    std::atomic<bool> drained{false};
    std::thread drainer([&] {
        server.stop(drain_timeout);
        drained = true;
    });
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    while (!drained) {
        // A short wait: the drain's end is noticed within 50 ms.
        timespec poll{0, 50'000'000};
        if (sigtimedwait(&stop_signals, nullptr, &poll) < 0) continue;
        const auto cut = server.metrics().active_connections();
        std::fprintf(stderr, "vaultgate: second signal: exiting now, %llu connection%s cut\n",
                     static_cast<unsigned long long>(cut), cut == 1 ? "" : "s");
        server.access_log().flush();
        std::_Exit(1);
    }
    drainer.join();
    server.wait();
    log_info("stopped");
    return 0;
}

}  // namespace

int check_config(const CheckOptions& options) {
    auto config = load_or_report(options.config_path);
    if (!config) return 2;
    if (report(*config, run_preflight(*config, PreflightOptions{options.bind_check}), /*warnings=*/true)) return 2;
    // Reads the credentials as `serve` will (size and read errors); the
    // pre-flight has already named any file that cannot be opened.
    try {
        std::vector<std::string> warnings;
        build_state(*config, warnings);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "vaultgate: %s\n", e.what());
        return 2;
    }
    return 0;
}

int run_gateway(const GatewayOptions& gateway) {
    // Blocks of 4 KiB and more (OpenSSL's per-connection state and record
    // buffers, receive buffers) that the heap's free lists cannot serve get
    // pages of their own instead of growing the heap between small objects.
    // Freed, those go back to the system whole, and a burst of connections
    // does not leave the small objects idle connections keep scattered over
    // mostly empty pages (docs/benchmarks.md: memory per idle connection).
    // Setting it also ends glibc's raising of the threshold after frees. The
    // mmap/munmap calls this would cost every new connection are mostly saved
    // by the I/O threads' block caches (block_cache.hpp); busy connections
    // keep their buffers and make none.
    mallopt(M_MMAP_THRESHOLD, 4096);
    const std::string& path = gateway.config_path;
    auto config = load_or_report(path);
    if (!config) return 2;
    LogLevel level = LogLevel::info;
    parse_log_level(config->log_level, level);
    set_log_level(level);
    if (!block_cache::openssl_allocations_routed())
        log_warn(
            "OpenSSL allocations are not routed through the block cache: each new TLS connection "
            "will cost a few more mmap/munmap calls");

    // The first real snapshot comes from the admin API's load() below, which
    // reads the config's credentials and the store; until then nothing is served.
    auto state = std::make_shared<const GatewayState>();
    // check-config's checks, with their places in the file; the listeners are
    // bound for real below. The warnings come again, from the first state.
    if (report(*config, run_preflight(*config, PreflightOptions{/*bind_check=*/false}), /*warnings=*/false)) return 2;
    ensure_ca(*config);
    std::optional<std::string> admin_token;
    if (config->admin_token_file) admin_token = read_admin_token_file(*config->admin_token_file, "admin.token_file");

    // The store: a wrong master key or a damaged file stops the start here.
    auto master_key = load_master_key(config->store_master_key_file);
    // An older copy of the store put back is refused unless --allow-rollback;
    // a database store is migrated to this version's schema.
    auto store = open_configured_store(*config, master_key, gateway.allow_rollback);

    // Signals are taken synchronously by this thread; worker threads inherit the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    std::unique_ptr<AdminApi> api;
    ServerOptions options;
    options.admin_handler = [&api](const AdminRequest& request) { return api->handle(request); };
    options.admin_token = admin_token;
    options.on_proxy_bound = [&api, &config](std::uint16_t port) {
        ListenAddress bound = config->listen_proxy;
        bound.port = port;
        api->set_proxy_url("http://" + bound.to_string());
    };
    auto server = make_server(*config, state, options);

    AdminOptions admin_options;
    admin_options.proxy_url = "http://" + config->listen_proxy.to_string();
    admin_options.ca_cert_pem = read_file(config->ca_cert, "ca.cert");
    Server* srv = server.get();
    api = std::make_unique<AdminApi>(
        *config, std::move(store), master_key, admin_options,
        [srv](std::shared_ptr<const GatewayState> s) { srv->replace_state(std::move(s)); }, &server->access_log(),
        &server->metrics(), [srv] { return srv->metrics_extras(); });
    api->on_session_closed = [srv](const std::string& id) { srv->close_session_connections(id); };
    try {
        api->load();
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "vaultgate: %s\n", e.what());
        return 2;
    }
    server->start();
    // Other replicas' changes, from now on and what came since load().
    const auto follower = follow_store_changes(*config, *api);
    sd_notify_state("READY=1\nSTATUS=serving");

    TrimSchedule trim;
    auto drain_timeout = config->limits.drain_timeout;
    const ReloadTargets reload_targets{*api, *server, *config, admin_token};
    for (;;) {
        // Wakes at least once a second to close sessions whose TTL ran out.
        timespec tick{1, 0};
        int sig = sigtimedwait(&signals, nullptr, &tick);
        if (sig < 0) {
            on_tick(*api, *server, trim);
            continue;
        }
        if (sig == SIGHUP) {
            reload(path, reload_targets, drain_timeout);
            continue;
        }
        return drain_then_stop(*server, drain_timeout);
    }
}

}  // namespace vaultgate
