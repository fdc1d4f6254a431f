#pragma once
// SIGHUP (docs/reference/configuration.md, "Reload behaviour"): what a reload
// replaces, and the keys read only at start, which it names in a warning.
#include "vaultgate/config/config.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vaultgate {

class AdminApi;
class Server;

// One phrase per key read only at start whose value differs in `next`, e.g.
// "listen.proxy changed (127.0.0.1:3128 -> 127.0.0.1:3129)". Addresses, paths
// and numbers only: nothing read from a file.
std::vector<std::string> start_only_changes(const Config& started, const Config& next);

struct ReloadTargets {
    AdminApi& api;
    Server& server;
    const Config& started;                          // the config the process started with
    const std::optional<std::string>& admin_token;  // the token in use, read at start
};

// Applies `next`, a config that loaded and validated: vaults, sessions and
// policies; upstream.*, log.* and limits.*; a warning for each start-only key
// that changed. Every outcome gets a log line. Returns true when all of it
// applied, false when a part was refused (the line says which).
bool apply_reload(const Config& next, const ReloadTargets& targets);

}  // namespace vaultgate
