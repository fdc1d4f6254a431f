#pragma once
// The pre-flight: what would stop `serve` after the config parsed, found
// without serving (docs/reference/cli.md, check-config). Every referenced
// file exists and can be read, private ones are not open to group or others,
// the CA certificate and key match, the listeners can be bound, and the
// environment holds the credentials named by `env:` (a warning only).
// `check-config` runs all of it; `serve` runs it without the bind check,
// which its own bind then does for real.
#include "vaultgate/config/config.hpp"

#include <string>
#include <vector>

namespace vaultgate {

struct PreflightFinding {
    enum class Severity { error, warning };
    Severity severity = Severity::error;
    std::string key;      // the config key it is about: "upstream.ca_file"
    std::string message;  // names files, never a secret
    std::string at;       // the key whose place is shown, when not `key` (a key the file leaves out)
};

struct PreflightOptions {
    bool bind_check = true;  // try to bind every listener, then close it
};

// Every finding, in the order of their places in the file.
std::vector<PreflightFinding> run_preflight(const Config& config, const PreflightOptions& options);

// "FILE:LINE:COL: key: message", with "warning: " before a warning's message.
std::string describe(const Config& config, const PreflightFinding& finding);

// The CA `serve` creates on its first start: both files missing, named
// ca.pem and ca-key.pem in one directory.
bool ca_created_on_start(const Config& config);

}  // namespace vaultgate
