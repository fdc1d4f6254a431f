// `vaultgate serve` and `vaultgate check-config`: the options; the gateway
// itself runs in the app layer (vaultgate/app/gateway.hpp).
#include "cli/command_tree.hpp"
#include "vaultgate/app/gateway.hpp"

#include <memory>

namespace vaultgate::cli {

void add_serve_commands(CLI::App& root, CommandRun& run) {
    auto serve = std::make_shared<GatewayOptions>();
    CLI::App* serve_cmd = root.add_subcommand("serve", "Run the gateway (SIGHUP reloads, SIGTERM/SIGINT drain)");
    serve_cmd->add_option("--config", serve->config_path, "The config file")->required()->type_name("FILE");
    serve_cmd
        ->add_flag("--allow-rollback", serve->allow_rollback,
                   "Start even from a store older than its generation record")
        ->disable_flag_override();
    serve_cmd->callback([serve, &run] { run = [serve] { return run_gateway(*serve); }; });

    auto check = std::make_shared<CheckOptions>();
    auto no_bind_check = std::make_shared<bool>(false);
    CLI::App* check_cmd = root.add_subcommand("check-config", "Validate a config file and exit");
    check_cmd->add_option("--config", check->config_path, "The config file")->required()->type_name("FILE");
    check_cmd->add_flag("--no-bind-check", *no_bind_check, "Do not try to bind the listeners")->disable_flag_override();
    check_cmd->callback([check, no_bind_check, &run] {
        check->bind_check = !*no_bind_check;
        run = [check] { return check_config(*check); };
    });
}

}  // namespace vaultgate::cli
