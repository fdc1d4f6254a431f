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

void add_self_parsed_command(CLI::App& root, const char* name, const char* description,
                             int (*command)(const Args&), CommandRun& run) {
    CLI::App* sub = root.add_subcommand(name, description);
    sub->prefix_command();
    sub->allow_extras();
    sub->callback([sub, command, &run] { run = [args = sub->remaining(), command] { return command(args); }; });
}

}  // namespace vaultgate::cli
