#pragma once
// Usage errors from the command-line parser, reported the way every vaultgate
// usage error is: "vaultgate COMMAND: message", a hint, exit code 2.
#include <CLI/CLI.hpp>

#include <string>

namespace vaultgate::cli {

// "vaultgate ca init": the root and the subcommands the command line chose.
std::string chosen_command_path(const CLI::App& root);

// Prints the error with a hint (the closest known option for a mistyped one,
// else where the help is) and returns 2. Without any command, prints the
// usage summary to stderr.
int report_parse_error(const CLI::App& root, const CLI::ParseError& error);

}  // namespace vaultgate::cli
