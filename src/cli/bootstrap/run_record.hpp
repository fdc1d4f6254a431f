#pragma once
// What one bootstrap run made on the server, kept so that
// `vaultgate bootstrap --cleanup SESSION` removes exactly that. The record
// lives in the operator's state directory, never in --out-dir: the sandbox may
// be able to write there, and a record it rewrote could name a vault the run
// did not make.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate::cli::bootstrap {

struct RunRecord {
    std::string session_id;
    std::string vault_id;
    std::string vault_name;
    bool vault_created = false;                    // by this run
    std::vector<std::string> credentials_created;  // names; rotated ones are not the run's
    std::vector<std::string> credentials_rotated;  // names, for the reader only
    std::vector<std::string> services_created;     // ids
};

// $XDG_STATE_HOME/vaultgate/bootstrap, else ~/.local/state/vaultgate/bootstrap.
std::filesystem::path record_dir();

// Makes the directory (0700) and checks that a file can be made in it, before
// the run changes anything; a UsageError saying why otherwise.
void prepare_record_dir();

// record_dir()/SESSION.json.
std::filesystem::path record_path(const std::string& session_id);

// Written as write_file does, mode 0600.
void save_record(const RunRecord& record);

// The record of SESSION; nullopt when there is none. A std::runtime_error when
// it is not a regular file of this user that only this user can write, or
// does not parse.
std::optional<RunRecord> load_record(const std::string& session_id);

void remove_record(const std::string& session_id);

}  // namespace vaultgate::cli::bootstrap
