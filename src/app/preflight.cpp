// The pre-flight as a whole: the check groups, the environment credentials,
// and findings ordered like the file they point into.
#include "vaultgate/app/preflight.hpp"

#include "preflight_checks.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <tuple>

namespace vaultgate {

namespace {

// The environment may differ between this check and `serve` (a unit's
// Environment=, a secret manager's wrapper), so an unset variable is a warning.
void check_environment(const Config& config, preflight::Findings& out) {
    for (std::size_t i = 0; i < config.vaults.size(); ++i) {
        const auto& vault = config.vaults[i];
        for (const auto& [name, source] : vault.credentials) {
            if (source.kind != CredentialSource::Kind::env) continue;
            const char* value = std::getenv(source.ref.c_str());
            if (value && *value) continue;
            out.push_back(PreflightFinding{PreflightFinding::Severity::warning,
                                           "vaults[" + std::to_string(i) + "].credentials." + name + ".env",
                                           "environment variable " + source.ref + " is not set or empty: credential " +
                                               name + " of vault " + vault.name +
                                               " will be unset, and requests that need it get 503 credential_missing",
                                           {}});
        }
    }
}

const std::string& place_key(const PreflightFinding& f) { return f.at.empty() ? f.key : f.at; }

}  // namespace

bool ca_created_on_start(const Config& config) {
    namespace fs = std::filesystem;
    struct stat st {};
    if (::lstat(config.ca_cert.c_str(), &st) == 0 || ::lstat(config.ca_key.c_str(), &st) == 0) return false;
    const fs::path cert(config.ca_cert), key(config.ca_key);
    return cert.parent_path() == key.parent_path() && cert.filename() == "ca.pem" && key.filename() == "ca-key.pem";
}

std::vector<PreflightFinding> run_preflight(const Config& config, const PreflightOptions& options) {
    preflight::Findings out;
    preflight::check_listeners(config, options.bind_check, out);
    preflight::check_ca(config, out);
    preflight::check_referenced_files(config, out);
    check_environment(config, out);
    preflight::check_auth(config, out);
    std::stable_sort(out.begin(), out.end(), [&](const PreflightFinding& a, const PreflightFinding& b) {
        const auto pa = config.position_of(place_key(a)), pb = config.position_of(place_key(b));
        return std::tie(pa.line, pa.column) < std::tie(pb.line, pb.column);
    });
    return out;
}

std::string describe(const Config& config, const PreflightFinding& finding) {
    const bool warning = finding.severity == PreflightFinding::Severity::warning;
    return config.place_of(place_key(finding)) + ": " + finding.key + ": " + (warning ? "warning: " : "") +
           finding.message;
}

}  // namespace vaultgate
