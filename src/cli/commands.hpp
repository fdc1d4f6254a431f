#pragma once
// The subcommands of the vaultgate binary. Each returns the process exit code:
// 0 ok, 1 runtime failure, 2 usage or config error.
#include <stdexcept>
#include <string>
#include <vector>

namespace vaultgate::cli {

using Args = std::vector<std::string>;


struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace vaultgate::cli
