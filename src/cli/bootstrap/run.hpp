#pragma once
// `vaultgate bootstrap` and `vaultgate bootstrap --cleanup SESSION`, after the
// command line was read (bootstrap_command.cpp). Both return the exit code.
#include "cli/admin_client.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate::cli::bootstrap {

// The options, each already checked.
struct RunOptions {
    std::optional<std::string> vault_name;
    EnvFormat format = EnvFormat::env;
    std::vector<std::string> secret_names;
    std::optional<std::string> out_dir;
    std::optional<std::uint64_t> ttl;
};

// Called once the input is known to be good, so that a bad input fails
// before the token file is even read.
using OpenAdmin = std::function<AdminClient()>;

// Reads and checks stdin, prepares the cleanup record's directory and the
// output directory, and only then changes the server.
int run_bootstrap(const RunOptions& options, const OpenAdmin& open_admin);

// Deletes the session and, as its run's record says, what that run made
// (docs/reference/bootstrap.md#cleanup).
int run_cleanup(const std::string& session_id, const OpenAdmin& open_admin);

}  // namespace vaultgate::cli::bootstrap
