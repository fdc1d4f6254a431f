#pragma once
// The running gateway as a whole: load the config, make sure the proxy CA
// exists, open the store, build the admin API and the server, and turn
// signals into reloads (SIGHUP) and a drain (SIGINT, SIGTERM).
#include <string>

namespace vaultgate {

struct GatewayOptions {
    std::string config_path;
    bool allow_rollback = false;  // load a store older than the generation record
};

// Serves until SIGINT or SIGTERM. Returns the process exit code: 0 after a
// clean drain, 2 for a config error or a finding of the pre-flight (printed
// to stderr with its place). Other failures (the CA, the store, binding a
// listener) throw.
int run_gateway(const GatewayOptions& options);

struct CheckOptions {
    std::string config_path;
    bool bind_check = true;  // try to bind every listener (off: --no-bind-check)
};

// Loads the config and runs the pre-flight (vaultgate/app/preflight.hpp)
// without serving; 0 when nothing is wrong (warnings printed), 2 when
// something is, with every finding printed to stderr.
int check_config(const CheckOptions& options);

}  // namespace vaultgate
