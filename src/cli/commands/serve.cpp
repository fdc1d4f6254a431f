// `vaultgate serve` and `vaultgate check-config`: the options; the gateway
// itself runs in the app layer (vaultgate/app/gateway.hpp).
#include "cli/command_line.hpp"
#include "vaultgate/app/gateway.hpp"

namespace vaultgate::cli {

namespace {

// serve and check-config ignore arguments they do not know (docs/reference/cli.md).
CommandLine serve_command_line(const Args& args) {
    return parse_command_line(args, OptionSpec{{"--config"}, {"--allow-rollback", "--no-bind-check"}, true});
}

std::string config_path(const CommandLine& command_line) {
    auto path = command_line.value("--config");
    if (!path) throw UsageError("--config FILE is required");
    return *path;
}

}  // namespace

int check_config(const Args& args) {
    const CommandLine command_line = serve_command_line(args);
    return vaultgate::check_config(CheckOptions{config_path(command_line), !command_line.flag("--no-bind-check")});
}

int serve(const Args& args) {
    const CommandLine command_line = serve_command_line(args);
    GatewayOptions options;
    options.config_path = config_path(command_line);
    options.allow_rollback = command_line.flag("--allow-rollback");
    return run_gateway(options);
}

}  // namespace vaultgate::cli
