#pragma once
// The pre-flight's groups of checks (vaultgate/app/preflight.hpp) and the file
// tests they share. Each group appends its findings; none stops at the first.
#include "vaultgate/app/preflight.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vaultgate::preflight {

using Findings = std::vector<PreflightFinding>;

void check_ca(const Config& config, Findings& out);                    // preflight_files.cpp
void check_referenced_files(const Config& config, Findings& out);      // preflight_files.cpp
void check_listeners(const Config& config, bool bind, Findings& out);  // preflight_listeners.cpp
void check_auth(const Config& config, Findings& out);                  // preflight_auth.cpp

// Why `path` cannot be opened for reading, or is a directory, or (with
// `regular_only`) is not a regular file; nullopt when it is fine.
std::optional<std::string> unreadable(const std::string& path, bool regular_only);
// Why `dir` cannot hold new files (missing, not a directory, not writable).
std::optional<std::string> unwritable_directory(const std::string& dir);
// The directory a path's file is in ("." for a bare name).
std::string directory_of(const std::string& path);

}  // namespace vaultgate::preflight
