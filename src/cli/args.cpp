#include "cli/commands.hpp"

#include <cstdio>

namespace vaultgate::cli {

bool option_value(const Args& args, const std::string& name, std::string& out) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == name) {
            if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
            out = args[i + 1];
            return true;
        }
        if (args[i].rfind(name + "=", 0) == 0) {
            out = args[i].substr(name.size() + 1);
            return true;
        }
    }
    return false;
}

bool has_flag(const Args& args, const std::string& name) {
    for (const auto& a : args)
        if (a == name) return true;
    return false;
}

void print_usage(bool to_stderr) {
    std::FILE* out = to_stderr ? stderr : stdout;
    std::fputs(
        "usage: vaultgate COMMAND [OPTIONS]\n"
        "\n"
        "  serve --config FILE            run the proxy (SIGHUP reloads, SIGTERM/SIGINT drain)\n"
        "        [--allow-rollback]       start even from a store older than the last one seen\n"
        "  check-config --config FILE     validate a config file and exit\n"
        "  ca init [--out DIR] [--name CN]  write DIR/ca.pem and DIR/ca-key.pem (default DIR: certs)\n"
        "  bootstrap [--vault NAME] [--format env|json|shell] [--secret NAME ...] [--out-dir DIR] [--ttl S]\n"
        "                                 read a sandbox's env object (JSON) on stdin, store its secrets in a\n"
        "                                 vault, open a session, print the env with placeholders and the proxy\n"
        "  vault create NAME | list | show ID\n"
        "  vault add-credential ID NAME [--value-file F]   value from F, else stdin; never from argv\n"
        "  vault rotate ID NAME [--value-file F]\n"
        "  vault remove-credential ID NAME | remove-service ID SID\n"
        "  vault add-service ID --host H [--port P] [--path-prefix P] --auth TYPE --key K\n"
        "                   [--header H] [--user U] [--template T] [--param P] [--redact-response]\n"
        "  session create --vault ID [--vault ID ...] [--ttl SECONDS] [--policy NAME | --allow-domain D ...]\n"
        "                 [--source CIDR]\n"
        "  session delete ID\n"
        "  logs [--vault V] [--session S] [--limit N] [--follow]\n"
        "  --version, --help\n"
        "\n"
        "Admin commands (bootstrap, vault, session, logs) also take --admin URL (else $VAULTGATE_ADMIN, else\n"
        "http://127.0.0.1:3190; or unix:PATH) and --token-file F (else $VAULTGATE_ADMIN_TOKEN_FILE); vault,\n"
        "session and logs take --json to print the server's JSON instead of a table.\n"
        "\n"
        "Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.\n",
        out);
}

}  // namespace vaultgate::cli
