#pragma once
// The config file (docs/reference/configuration.md): parsed, validated, defaults filled in. Every
// error names file:line:column. No Asio here.
#include "vaultgate/credentials/inject.hpp"
#include "vaultgate/egress/host.hpp"
#include "vaultgate/egress/policy.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;  // message is "file:line:col: what"
};

// "127.0.0.1:3128", "[::1]:3128", or "unix:/path" (admin only).
struct ListenAddress {
    std::string host;  // IP literal, or empty for unix
    std::uint16_t port = 0;
    std::string unix_path;  // set for "unix:..."
    bool is_unix() const { return !unix_path.empty(); }
    std::string to_string() const;
};

struct CredentialSource {
    enum class Kind { env, file } kind = Kind::env;
    std::string ref;  // env var name or file path
};

struct ServiceConfig {
    std::string host;  // normalised; a wildcard keeps its "*." prefix
    std::uint16_t port = 443;
    std::string path_prefix = "/";
    AuthSpec auth;
    bool redact_response = false;

    bool matches(std::string_view normalised_host, std::uint16_t port) const;
    // Same host pattern, port and path_prefix: both match exactly the same
    // requests, so no rule of specificity can choose between them.
    bool same_binding(const ServiceConfig& other) const {
        return host == other.host && port == other.port && path_prefix == other.path_prefix;
    }
};

struct VaultConfig {
    std::string name;
    std::map<std::string, CredentialSource> credentials;
    std::vector<ServiceConfig> services;
};

struct SessionConfig {
    std::vector<std::string> vaults;
    std::string egress_policy = "default";
};

struct Limits {
    std::size_t max_connections = 10000;
    std::size_t max_connections_per_client = 1000;
    std::size_t header_bytes = 65536;
    std::size_t header_count = 100;
    std::chrono::milliseconds handshake_timeout{10000};
    std::chrono::milliseconds header_timeout{10000};
    std::chrono::milliseconds idle_timeout{60000};
    std::chrono::milliseconds drain_timeout{15000};
    std::chrono::milliseconds connect_timeout{10000};   // upstream TCP + TLS
    std::chrono::milliseconds response_timeout{60000};  // upstream response head
    // How long an upstream connection waits in the pool for the next request of
    // its session. Shorter than common server keep-alive timeouts (nginx: 75 s),
    // so a pooled connection is rarely one the origin is about to close.
    std::chrono::milliseconds upstream_idle_timeout{30000};
    std::size_t worker_threads = 0;      // 0 = auto, see auto_worker_threads()
    std::size_t admin_connections = 64;  // the admin listener's own cap
    // The most of a request body vaultgate reads to hash it for aws-sigv4.
    std::size_t sign_body_bytes = 8 * 1024 * 1024;
    // Streams one HTTP/2 client connection may have open at once.
    std::size_t h2_max_concurrent_streams = 100;
};

// The I/O thread count for worker_threads = 0: one per core (at least one).
// On a host whose cores are busy with the workloads vaultgate serves, fewer
// threads give a shorter latency tail (a thread that competes for the last
// core is preempted mid-request); more threads give more throughput.
unsigned auto_worker_threads(unsigned cores);

// A place in the config file, 1-based.
struct SourcePosition {
    std::size_t line = 1;
    std::size_t column = 1;
};

struct Config {
    std::string source_path;  // the file it came from, for reloads and messages
    // Where each key's value is in the file, by key path ("upstream.ca_file",
    // "vaults[0].credentials.API_KEY.file"), for checks made after parsing.
    std::map<std::string, SourcePosition, std::less<>> positions;

    // The place of `key_path`'s value; for a key left at its default, that of
    // the nearest enclosing key the file gives (its section), else 1:1.
    SourcePosition position_of(std::string_view key_path) const;
    // "FILE:LINE:COL" for position_of(key_path).
    std::string place_of(std::string_view key_path) const;

    ListenAddress listen_proxy{"127.0.0.1", 3128, {}};
    std::optional<ListenAddress> listen_transparent;
    ListenAddress listen_admin{"127.0.0.1", 3190, {}};

    std::string ca_cert = "certs/ca.pem";
    std::string ca_key = "certs/ca-key.pem";

    std::string upstream_ca_file = "system";
    std::map<std::string, std::string> upstream_resolve;  // normalised host -> IP literal

    std::string store_path = "vaultgate.db";
    std::optional<std::string> store_url;  // a shared PostgreSQL store instead of the file
    std::optional<std::string> store_master_key_file;
    // store.url only: how long a removal's record is kept for replicas that
    // are behind (pgstore/pg_store.hpp).
    std::chrono::milliseconds store_removals_retention = std::chrono::hours(168);
    // store.url only: the local snapshot a replica starts from while its
    // database cannot be reached (vault/store.hpp, with_local_snapshot).
    std::optional<std::string> store_snapshot_path;
    std::chrono::milliseconds store_snapshot_interval = std::chrono::seconds(10);
    std::chrono::milliseconds store_snapshot_max_age = std::chrono::hours(24);

    std::optional<std::string> admin_token_file;

    std::string log_access = "stdout";
    std::string log_level = "info";

    Limits limits;
    // ALPN protocols offered to clients of intercepted hosts, in vaultgate's
    // order of preference: "h2" and/or "http/1.1".
    std::vector<std::string> mitm_alpn{"h2", "http/1.1"};
    std::vector<VaultConfig> vaults;
    std::map<std::string, SessionConfig> sessions;
    std::map<std::string, EgressPolicy> egress_policies;
};

// Parses YAML text; `source_name` is used in error messages. Throws ConfigError.
Config parse_config(const std::string& yaml_text, const std::string& source_name);
// Reads and parses a file. Throws ConfigError (also for an unreadable file).
Config load_config_file(const std::string& path);

// Why `url` cannot name the shared store (not a postgresql:// URL, or a
// password in it, which belongs in PGPASSFILE); nullopt when it can.
std::optional<std::string> store_url_problem(std::string_view url);

// "10s", "250ms", "2m", "1h" -> milliseconds; nullopt if malformed.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace vaultgate
