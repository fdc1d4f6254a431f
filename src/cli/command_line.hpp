#pragma once
// The one command-line reader of the vaultgate binary: every command declares
// the options it takes and reads them through a CommandLine.
#include "cli/command_tree.hpp"
#include "cli/commands.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate::cli {

// "--name VALUE" and "--name=VALUE" for options that take a value, bare flags,
// positionals; "--" ends the options. Anything else starting with "--" is a
// UsageError, so a mistyped option is never taken for a positional, unless
// the spec says to ignore unknown options (serve, check-config, ca: other
// arguments are ignored there, as docs/reference/cli.md says).
struct CommandLine {
    std::vector<std::string> positional;
    std::vector<std::pair<std::string, std::string>> options;  // in order, repeats kept
    std::vector<std::string> flags;

    std::optional<std::string> value(std::string_view name) const;  // the last one given
    std::vector<std::string> values(std::string_view name) const;
    bool flag(std::string_view name) const;
};

struct OptionSpec {
    std::vector<std::string_view> with_value;
    std::vector<std::string_view> flags;
    bool ignore_unknown = false;
};

// The options every admin command takes, beside its own.
inline const OptionSpec admin_options{{"--admin", "--token-file"}, {"--json"}};

CommandLine parse_command_line(const Args& args, const OptionSpec& spec);

// "vault --json list" and "vault list --json" alike: the first argument that is
// neither an admin option nor its value names the subcommand. Returns it (empty
// when there is none) and the arguments without it.
std::pair<std::string, Args> split_subcommand(const Args& args);

// A whole number in [min, max], else a UsageError naming the option.
std::uint64_t parse_number(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max);

// A subcommand that reads its own arguments with parse_command_line: CLI11
// hands it everything after its name (its --help excepted).
void add_self_parsed_command(CLI::App& root, const char* name, const char* description,
                             int (*command)(const Args&), CommandRun& run);

}  // namespace vaultgate::cli
