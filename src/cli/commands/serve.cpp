// `vaultgate serve` and `vaultgate check-config`: the options; the gateway
// itself runs in the app layer (vaultgate/app/gateway.hpp).
#include "cli/admin_client.hpp"  // read_token_file
#include "cli/commands.hpp"
#include "vaultgate/app/gateway.hpp"

namespace vaultgate::cli {

namespace {

std::string config_path(const Args& args) {
    std::string path;
    if (!option_value(args, "--config", path)) throw UsageError("--config FILE is required");
    return path;
}

}  // namespace

int check_config(const Args& args) { return vaultgate::check_config(config_path(args)); }

int serve(const Args& args) {
    GatewayOptions options;
    options.config_path = config_path(args);
    options.allow_rollback = has_flag(args, "--allow-rollback");
    // The admin token file, read as the CLI reads it.
    options.read_admin_token_file = [](const std::string& path) { return read_token_file(path, "admin.token_file"); };
    return run_gateway(options);
}

}  // namespace vaultgate::cli
