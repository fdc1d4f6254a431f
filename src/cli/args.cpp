#include "commands.hpp"

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
        "  check-config --config FILE     validate a config file and exit\n"
        "  ca init [--out DIR] [--name CN]  write DIR/ca.pem and DIR/ca-key.pem (default DIR: certs)\n"
        "  --version, --help\n"
        "\n"
        "Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.\n",
        out);
}

}  // namespace vaultgate::cli
