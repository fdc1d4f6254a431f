#pragma once
// The vaultgate command tree, on CLI11. Each command file adds its subcommand
// to the root; the subcommand's callback, which CLI11 runs only after the
// whole command line parsed (never for --help), leaves in `run` what to do.
#include <CLI/CLI.hpp>

#include <functional>

namespace vaultgate::cli {

// What the chosen command does; returns the process exit code (0 ok,
// 1 runtime failure, 2 usage or config error).
using CommandRun = std::function<int()>;

void add_serve_commands(CLI::App& root, CommandRun& run);  // serve, check-config
void add_ca_command(CLI::App& root, CommandRun& run);
void add_vault_commands(CLI::App& root, CommandRun& run);
void add_session_commands(CLI::App& root, CommandRun& run);
void add_logs_command(CLI::App& root, CommandRun& run);
void add_bootstrap_command(CLI::App& root, CommandRun& run);
void add_explain_command(CLI::App& root, CommandRun& run);
void add_store_command(CLI::App& root, CommandRun& run);  // store migrate
// `completion bash`: the script is read from the finished tree.
void add_completion_command(CLI::App& root, CommandRun& run);

}  // namespace vaultgate::cli
