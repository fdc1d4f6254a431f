#include "cli/command_line.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace vaultgate::cli {

std::optional<std::string> CommandLine::value(std::string_view name) const {
    std::optional<std::string> found;
    for (const auto& [n, v] : options)
        if (n == name) found = v;
    return found;
}

std::vector<std::string> CommandLine::values(std::string_view name) const {
    std::vector<std::string> found;
    for (const auto& [n, v] : options)
        if (n == name) found.push_back(v);
    return found;
}

bool CommandLine::flag(std::string_view name) const {
    return std::find(flags.begin(), flags.end(), name) != flags.end();
}

namespace {

bool listed(const std::vector<std::string_view>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

CommandLine parse_command_line(const Args& args, const OptionSpec& spec) {
    CommandLine out;
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (options_done || arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
            out.positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_done = true;
            continue;
        }
        // Only the name is ever quoted back: what follows "=" may be a value the
        // user did not mean to show.
        auto eq = arg.find('=');
        std::string name = arg.substr(0, eq);
        if (listed(spec.with_value, name)) {
            if (eq != std::string::npos) {
                out.options.emplace_back(name, arg.substr(eq + 1));
            } else {
                if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
                out.options.emplace_back(name, args[++i]);
            }
        } else if (listed(spec.flags, name)) {
            if (eq != std::string::npos) throw UsageError(name + " takes no value");
            out.flags.push_back(name);
        } else if (!spec.ignore_unknown) {
            throw UsageError("unknown option " + name);
        }
    }
    return out;
}

std::pair<std::string, Args> split_subcommand(const Args& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (listed(admin_options.with_value, arg)) {
            ++i;  // skip its value
            continue;
        }
        if (arg.rfind("--", 0) == 0) continue;
        Args rest(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
        rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
        return {arg, rest};
    }
    return {"", args};
}

std::uint64_t parse_number(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max) {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < min || n > max)
        throw UsageError(std::string(option) + " must be a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max));
    return n;
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
