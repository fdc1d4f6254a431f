// `vaultgate serve` and `vaultgate check-config`: load the config, build the
// state, run the server, and turn signals into reloads and drains.
#include "commands.hpp"
#include "vaultgate/ca.hpp"
#include "vaultgate/config.hpp"
#include "vaultgate/diag_log.hpp"
#include "vaultgate/gateway_state.hpp"
#include "vaultgate/server.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <pthread.h>

namespace vaultgate::cli {

namespace {

std::string config_path(const Args& args) {
    std::string path;
    if (!option_value(args, "--config", path)) throw UsageError("--config FILE is required");
    return path;
}

// Loads and validates; on error prints the file:line:col message and returns nullopt.
std::optional<Config> load_or_report(const std::string& path) {
    try {
        return load_config_file(path);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "vaultgate: %s\n", e.what());
        return std::nullopt;
    }
}

std::shared_ptr<const GatewayState> build_and_report(const Config& config) {
    std::vector<std::string> warnings;
    auto state = build_state(config, warnings);
    for (const auto& w : warnings) log_warn(w);
    return state;
}

// The quick start runs on a fresh checkout: a missing CA (both files absent)
// is generated once; one file without the other is an operator mistake.
void ensure_ca(const Config& config) {
    namespace fs = std::filesystem;
    bool cert = fs::exists(config.ca_cert), key = fs::exists(config.ca_key);
    if (cert && key) return;
    if (cert != key)
        throw std::runtime_error("ca: " + (cert ? config.ca_key : config.ca_cert) + " is missing while " +
                                 (cert ? config.ca_cert : config.ca_key) + " exists");
    auto dir = fs::path(config.ca_cert).parent_path();
    if (fs::path(config.ca_key).parent_path() != dir || fs::path(config.ca_cert).filename() != "ca.pem" ||
        fs::path(config.ca_key).filename() != "ca-key.pem")
        throw std::runtime_error("ca: " + config.ca_cert + " does not exist; create it with `vaultgate ca init`");
    create_ca_files(dir.empty() ? "." : dir.string(), "vaultgate proxy CA");
    log_info("generated a new proxy CA in " + (dir.empty() ? std::string(".") : dir.string()) +
             "; sandboxes must trust " + config.ca_cert);
}

}  // namespace

int check_config(const Args& args) {
    auto config = load_or_report(config_path(args));
    if (!config) return 2;
    try {
        std::vector<std::string> warnings;
        build_state(*config, warnings);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "vaultgate: %s\n", e.what());
        return 2;
    }
    return 0;
}

int serve(const Args& args) {
    const std::string path = config_path(args);
    auto config = load_or_report(path);
    if (!config) return 2;
    LogLevel level = LogLevel::info;
    parse_log_level(config->log_level, level);
    set_log_level(level);

    std::shared_ptr<const GatewayState> state;
    try {
        state = build_and_report(*config);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "vaultgate: %s\n", e.what());
        return 2;
    }
    ensure_ca(*config);

    // Signals are taken synchronously by this thread; worker threads inherit the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    auto server = make_server(*config, state);
    server->start();

    for (;;) {
        int sig = 0;
        if (sigwait(&signals, &sig) != 0) continue;
        if (sig == SIGHUP) {
            log_info("SIGHUP: reloading " + path);
            auto next = load_or_report(path);
            if (!next) {
                log_error("reload refused: the new config is invalid; the running config stays");
                continue;
            }
            try {
                server->replace_state(build_and_report(*next));
                log_info("reload done: vaults, sessions and policies replaced (listeners, CA and limits need a restart)");
            } catch (const ConfigError& e) {
                log_error(std::string("reload refused: ") + e.what());
            }
            continue;
        }
        log_info("draining connections, at most " + std::to_string(config->limits.drain_timeout.count()) + " ms");
        server->stop(config->limits.drain_timeout);
        server->wait();
        log_info("stopped");
        return 0;
    }
}

}  // namespace vaultgate::cli
