#pragma once
// The local side of `vaultgate bootstrap`: the output directory, the CA files
// the printed env points at, and files written so that a reader never sees
// half of one and nothing planted in the directory is followed.
#include <sys/types.h>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace vaultgate::cli::bootstrap {

// `bytes` random bytes as lower-case hex; a std::runtime_error when the system
// random generator fails.
std::string random_hex(std::size_t bytes);

// Absolute, because the sandbox's working directory is not ours.
struct OutDir {
    std::filesystem::path path;
    bool made_here = false;  // a temporary directory to remove if the run fails
};

// Checks --out-dir without changing anything: a UsageError when it exists and
// is not a directory, or cannot be made absolute.
std::filesystem::path check_out_dir(const std::string& given);

// --out-dir as checked above, made (0700, parents as needed) when missing;
// without it, a new temporary directory under $XDG_RUNTIME_DIR or /tmp.
OutDir prepare_out_dir(const std::optional<std::string>& given);

// Written to a new file beside `path` (exclusive, never through a link) and
// renamed over it. A std::runtime_error naming the path on failure.
void write_file(const std::filesystem::path& path, const std::string& content, mode_t mode = 0644);

// The system trust store followed by the vaultgate CA.
std::string ca_bundle(const std::string& ca_pem);

}  // namespace vaultgate::cli::bootstrap
