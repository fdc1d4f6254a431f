// vaultgate: an egress gateway that keeps API keys out of sandboxes.
#include "cli/command_tree.hpp"
#include "cli/commands.hpp"
#include "cli/option_hint.hpp"
#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/mem/block_cache.hpp"

#include <cstdio>
#include <exception>
#include <string>

namespace {

// VAULTGATE_COMMIT comes from CMakeLists.txt: the build's git commit, or "unknown".
constexpr const char* version_line = "vaultgate " VAULTGATE_VERSION " (commit " VAULTGATE_COMMIT ")";

// OpenSSL accepts allocation functions only before its first allocation, and
// Boost.Asio's SSL support initialises OpenSSL from a static initialiser, so
// this runs first (priority 101). serve reports it if it failed.
[[gnu::constructor(101)]] void route_openssl_allocations() { vaultgate::block_cache::route_openssl_allocations(); }

}  // namespace

int main(int argc, char** argv) {
    using namespace vaultgate::cli;
    CLI::App root{"vaultgate: an egress gateway that keeps API keys out of sandboxes.", "vaultgate"};
    root.footer("Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.");
    root.set_version_flag("--version", version_line, "Print the version and exit");
    root.require_subcommand(1);
    CommandRun run;
    add_serve_commands(root, run);
    add_ca_command(root, run);
    add_vault_commands(root, run);
    add_session_commands(root, run);
    add_logs_command(root, run);
    add_bootstrap_command(root, run);
    add_explain_command(root, run);
    add_store_command(root, run);
    root.add_subcommand("version", "Print the version and exit")->callback([&run] {
        run = [] {
            std::printf("%s\n", version_line);
            return 0;
        };
    });
    root.add_subcommand("help", "Print this help and exit")->callback([&run, &root] {
        run = [&root] {
            std::fputs(root.help().c_str(), stdout);
            return 0;
        };
    });

    add_completion_command(root, run);  // last: it reads the whole tree

    try {
        root.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(root.help().c_str(), stdout);  // the chosen subcommand's help
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::printf("%s\n", e.what());
        return 0;
    } catch (const CLI::ParseError& e) {
        return report_parse_error(root, e);
    }

    const std::string command = chosen_command_path(root);
    try {
        return run();
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s\n", command.c_str(), e.what());
        return 2;
    } catch (const vaultgate::AdminTokenError& e) {
        // The token file given is wrong: a usage error like the others.
        std::fprintf(stderr, "%s: %s\n", command.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", command.c_str(), e.what());
        return 1;
    }
}
