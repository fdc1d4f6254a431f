// A reload in two parts: the admin API's (vaults, sessions, policies) first,
// as before, then the server's (upstream trust and pins, limits, the access
// log) and the diagnostic log level.
#include "reload.hpp"

#include "vaultgate/admin/admin_api.hpp"
#include "vaultgate/app/server.hpp"
#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/util/secret.hpp"

#include <exception>

namespace vaultgate {

namespace {

std::string shown(const std::optional<ListenAddress>& address) { return address ? address->to_string() : "off"; }
std::string shown(const std::optional<std::string>& path) { return path ? *path : "none"; }
std::string shown(const std::string& text) { return text; }
std::string shown(std::size_t n) { return std::to_string(n); }

template <class T>
void compare(std::vector<std::string>& out, const char* key, const T& started, const T& next) {
    if (shown(started) != shown(next))
        out.push_back(std::string(key) + " changed (" + shown(started) + " -> " + shown(next) + ")");
}

// The token file at the same path with another token in it (a rotation):
// the running token stays, and the operator is told. The token is never shown.
void warn_if_token_rotated(const Config& started, const Config& next, const std::optional<std::string>& token) {
    if (!token || !next.admin_token_file || next.admin_token_file != started.admin_token_file) return;
    std::string now;
    try {
        now = read_admin_token_file(*next.admin_token_file, "admin.token_file");
    } catch (const std::exception&) {
        return;  // the running token stays either way; the next start reports the file
    }
    if (now != *token)
        log_warn("reload: the token in admin.token_file (" + *next.admin_token_file +
                 ") changed; it takes effect at the next start");
    wipe_string(now);
}

}  // namespace

std::vector<std::string> start_only_changes(const Config& started, const Config& next) {
    std::vector<std::string> out;
    compare(out, "listen.proxy", started.listen_proxy.to_string(), next.listen_proxy.to_string());
    compare(out, "listen.transparent", started.listen_transparent, next.listen_transparent);
    compare(out, "listen.admin", started.listen_admin.to_string(), next.listen_admin.to_string());
    compare(out, "ca.cert", started.ca_cert, next.ca_cert);
    compare(out, "ca.key", started.ca_key, next.ca_key);
    compare(out, "store.path", started.store_path, next.store_path);
    // A database URL is not shown: whatever it holds stays out of the log.
    if (started.store_url != next.store_url) out.push_back("store.url changed");
    compare(out, "store.master_key_file", started.store_master_key_file, next.store_master_key_file);
    compare(out, "admin.token_file", started.admin_token_file, next.admin_token_file);
    compare(out, "limits.worker_threads", started.limits.worker_threads, next.limits.worker_threads);
    compare(out, "limits.admin_connections", started.limits.admin_connections, next.limits.admin_connections);
    return out;
}

bool apply_reload(const Config& next, const ReloadTargets& targets) {
    try {
        targets.api.reload_config(next);
    } catch (const std::exception& e) {
        log_error(std::string("reload refused: ") + e.what());
        return false;
    }
    for (const auto& change : start_only_changes(targets.started, next))
        log_warn("reload: " + change + "; it takes effect at the next start");
    warn_if_token_rotated(targets.started, next, targets.admin_token);
    try {
        targets.server.reload(next);
    } catch (const std::exception& e) {
        log_error(std::string("reload refused for upstream.*, log.* and limits.*, which keep their running values: ") +
                  e.what() + " (vaults, sessions and policies were replaced)");
        return false;
    }
    log_info(
        "reload done: vaults, sessions, policies, upstream.*, log.* and limits.* replaced "
        "(limits apply to connections accepted from now on)");
    // Last, so that the line above shows whatever the new level.
    LogLevel level = LogLevel::info;
    if (parse_log_level(next.log_level, level)) set_log_level(level);
    return true;
}

}  // namespace vaultgate
