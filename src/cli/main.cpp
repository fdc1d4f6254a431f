// vaultgate: an egress gateway that keeps API keys out of sandboxes.
#include "cli/commands.hpp"
#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/mem/block_cache.hpp"

#include <cstdio>
#include <exception>

namespace {

// OpenSSL accepts allocation functions only before its first allocation, and
// Boost.Asio's SSL support initialises OpenSSL from a static initialiser, so
// this runs first (priority 101). serve reports it if it failed.
[[gnu::constructor(101)]] void route_openssl_allocations() { vaultgate::block_cache::route_openssl_allocations(); }

}  // namespace

int main(int argc, char** argv) {
    using namespace vaultgate::cli;
    Args args(argv + 1, argv + argc);
    if (args.empty()) {
        print_usage(true);
        return 2;
    }
    const std::string command = args.front();
    Args rest(args.begin() + 1, args.end());
    try {
        if (command == "--version" || command == "version") {
            std::printf("vaultgate %s\n", VAULTGATE_VERSION);
            return 0;
        }
        if (command == "--help" || command == "-h" || command == "help") {
            print_usage(false);
            return 0;
        }
        if (command == "serve") return serve(rest);
        if (command == "check-config") return check_config(rest);
        if (command == "ca") return ca_command(rest);
        if (command == "vault") return vault_command(rest);
        if (command == "session") return session_command(rest);
        if (command == "logs") return logs_command(rest);
        if (command == "bootstrap") return bootstrap_command(rest);
        std::fprintf(stderr, "vaultgate: unknown command '%s'\n", command.c_str());
        print_usage(true);
        return 2;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "vaultgate %s: %s\n", command.c_str(), e.what());
        return 2;
    } catch (const vaultgate::AdminTokenError& e) {
        // The token file given is wrong: a usage error like the others.
        std::fprintf(stderr, "vaultgate %s: %s\n", command.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vaultgate %s: %s\n", command.c_str(), e.what());
        return 1;
    }
}
