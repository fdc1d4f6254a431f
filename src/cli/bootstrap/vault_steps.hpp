#pragma once
// The server side of a bootstrap run, one step at a time: find the vault,
// make it, store each secret, bind each to its URL's host. Each step keeps
// what it made in the VaultState, which becomes the run's cleanup record.
#include "cli/admin_client.hpp"
#include "vaultgate/credentials/aws_env.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace vaultgate::cli::bootstrap {

// A service of the vault as bootstrap compares it: a binding with the same
// host, port, path prefix and auth is the one bootstrap would make.
struct ServiceShape {
    Authority authority;
    std::string path_prefix;
    std::string auth_type;
    std::string auth_header;  // lower case
    std::string auth_key;
    std::string host_pattern;  // the host as stored, wildcards included
    std::string aws_keys;      // aws-sigv4: "access_key_id secret_access_key session_token"
};

struct VaultState {
    std::string id;
    std::string name;
    bool created = false;  // by this run
    std::vector<std::string> credentials;
    std::vector<ServiceShape> services;

    std::vector<std::string> credentials_created;
    std::vector<std::string> credentials_rotated;
    std::vector<std::string> services_created;  // ids

    bool changed() const { return created || !credentials_created.empty() || !credentials_rotated.empty(); }
};

// Items of {"KEY":[...]} or of a bare array; an empty array otherwise.
nlohmann::json items_of(const nlohmann::json& body, const char* key);

// The API vault named `name` with its credentials and services; nullopt when
// there is none. A UsageError when a config vault has that name.
std::optional<VaultState> find_vault(const AdminClient& client, const std::string& name);

VaultState create_vault(const AdminClient& client, const std::string& name);

// Before anything is written: a UsageError for a secret whose URL's host the
// admin API would refuse to bind (this machine, a metadata address, a public
// suffix wildcard). vaultgate's own listeners are left to the server.
void check_bindings(const std::vector<SecretVar>& secrets, const std::vector<UrlVar>& urls);

// Stores a new credential, or rotates one of that name; the body holding the
// value is wiped once sent.
void store_secret(const AdminClient& client, VaultState& vault, const SecretVar& secret);

// Binds the secret to the URL's host with api-key / x-api-key, unless the
// vault already has that binding (kept) or another service for that host and
// port (left as it is).
void bind_secret(const AdminClient& client, VaultState& vault, const std::string& secret_name, const UrlVar& url);

// Binds AWS's key pair (and session token) to every AWS endpoint with
// aws-sigv4, unless the vault already has that binding (kept) or another
// service for that host (left as it is).
void bind_aws(const AdminClient& client, VaultState& vault, const AwsCredentialSet& set);

}  // namespace vaultgate::cli::bootstrap
