// `vaultgate bootstrap` (docs/reference/bootstrap.md): takes the env a
// platform hands a sandbox, moves its secrets into a vault, binds them to the
// hosts they are for, opens a session, and prints the env the sandbox gets
// instead. This file reads and checks the command line; run.cpp and
// cleanup.cpp do the work.
#include "cli/bootstrap/files.hpp"
#include "cli/bootstrap/run.hpp"
#include "cli/admin_connection.hpp"
#include "cli/command_line.hpp"
#include "cli/command_tree.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/state/session_ttl.hpp"

#include <cstdlib>
#include <memory>

namespace vaultgate::cli {

namespace {

// The server's limit on ttl_seconds, checked before anything is written.
constexpr auto max_session_ttl_seconds = static_cast<std::uint64_t>(max_session_ttl.count());

struct BootstrapArgs {
    AdminConnection connection;
    std::string vault;
    std::string format;
    std::vector<std::string> secrets;
    std::string out_dir;
    std::string ttl;
    std::string cleanup;
    const CLI::App* command = nullptr;

    bool given(const char* option) const { return command->count(option) > 0; }
};

// Every option is checked here, before stdin is read and before anything is
// written anywhere.
bootstrap::RunOptions check_options(const BootstrapArgs& args) {
    bootstrap::RunOptions o;
    if (args.given("--vault")) {
        if (auto problem = validation::check_name(args.vault, "vault")) throw UsageError("--vault: " + *problem);
        o.vault_name = args.vault;
    }
    if (args.given("--format")) {
        auto format = parse_env_format(args.format);
        if (!format) throw UsageError("--format must be env, json or shell");
        o.format = *format;
    }
    for (const auto& name : args.secrets)
        if (!is_env_name(name)) throw UsageError("--secret: not an environment variable name");
    o.secret_names = args.secrets;
    if (args.given("--out-dir")) {
        bootstrap::check_out_dir(args.out_dir);
        o.out_dir = args.out_dir;
    }
    if (args.given("--ttl")) o.ttl = parse_number(args.ttl, "--ttl", 1, max_session_ttl_seconds);
    return o;
}

}  // namespace

void add_bootstrap_command(CLI::App& root, CommandRun& run) {
    auto args = std::make_shared<BootstrapArgs>();
    CLI::App* cmd = root.add_subcommand(
        "bootstrap", "Turn a sandbox's env object (stdin) into a vault, a session and a placeholder env");
    cmd->footer("See docs/reference/bootstrap.md. Exit codes: 0 ok, 1 runtime failure, 2 usage error.");
    args->command = cmd;
    add_admin_options(*cmd, args->connection);
    auto* vault =
        cmd->add_option("--vault", args->vault, "The API vault to use; made if absent, else reused")->type_name("NAME");
    auto* format = cmd->add_option("--format", args->format, "env (default), json or shell")->type_name("F");
    auto* secret = cmd->add_option("--secret", args->secrets, "A variable that is a secret (repeatable)")
                       ->type_name("NAME")
                       ->allow_extra_args(false);
    auto* out_dir =
        cmd->add_option("--out-dir", args->out_dir, "Where the CA files go (default: a new temporary directory)")
            ->type_name("DIR");
    auto* ttl =
        cmd->add_option("--ttl", args->ttl,
                        "The session's lifetime, 1 to " + std::to_string(max_session_ttl_seconds) + " (default 3600)")
            ->type_name("SECONDS");
    cmd->add_option("--cleanup", args->cleanup, "Remove what the run that made SESSION made, and nothing else")
        ->type_name("SESSION")
        ->excludes(vault)
        ->excludes(format)
        ->excludes(secret)
        ->excludes(out_dir)
        ->excludes(ttl);
    cmd->callback([args, &run] {
        if (args->given("--cleanup")) {
            run = [args] {
                return bootstrap::run_cleanup(args->cleanup, [args] { return open_admin(args->connection); });
            };
            return;
        }
        run = [args] {
            const bootstrap::RunOptions options = check_options(*args);
            return bootstrap::run_bootstrap(options, [args] { return open_admin(args->connection); });
        };
    });
}

}  // namespace vaultgate::cli
