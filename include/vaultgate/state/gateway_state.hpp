#pragma once
// What the proxy decides with: vaults (credentials + bound services), sessions
// and their egress policies, in one immutable snapshot. Writers (startup,
// SIGHUP, the admin API) build a new snapshot and swap it in; each request reads
// the snapshot current when it starts, so a rotation applies to the next request.
#include "vaultgate/config/config.hpp"
#include "vaultgate/credentials/path_prefix.hpp"
#include "vaultgate/credentials/redact.hpp"
#include "vaultgate/egress/policy.hpp"
#include "vaultgate/state/sharded_table.hpp"
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate {

struct ServiceBinding {
    std::string id;  // "<vault>/<index>" for config services
    ServiceConfig config;
    // redact_response: the tables that scrub the credential from responses,
    // built once when the state is made (prepare_services). Null when the
    // service does not redact, the credential is missing, or the credential
    // occurs in its own placeholder (requests are then refused with 502).
    std::shared_ptr<const RedactionPatterns> redaction;
    // Minted types: minting_inputs_digest, set with the redaction tables, so
    // that a request compares it with the cached token's without hashing.
    std::string inputs_digest;
};

struct Vault {
    std::string id;
    std::string name;
    bool from_config = false;
    std::map<std::string, Secret> credentials;  // a name with no value is absent
    std::vector<ServiceBinding> services;
};

struct Session {
    std::string id;  // "default" for the listener's default session
    std::vector<std::string> vault_names;
    EgressPolicy policy;
    // Sessions made through the admin API: the token's SHA-256 (hex; the token
    // itself is never kept), when it stops working, and an optional source pin.
    std::string token_digest;  // empty for config sessions (no token)
    std::optional<std::chrono::system_clock::time_point> expires_at;
    std::optional<Cidr> source;

    bool expired_at(std::chrono::system_clock::time_point now) const { return expires_at && now >= *expires_at; }
    // A session pinned to a source admits only clients inside it; an address
    // that could not be read is inside none.
    bool admits(const std::optional<IpAddress>& client) const {
        return !source || (client && source->contains(*client));
    }
};

// One bound service that matches a destination, with what injection needs.
struct Binding {
    const Vault* vault = nullptr;
    const ServiceBinding* service = nullptr;
    const Secret* secret = nullptr;  // null when the credential is missing
};

// What a request on an intercepted (bound) host gets.
enum class Coverage {
    covered,       // `binding` is the most specific bound service whose path_prefix covers the path
    outside,       // a plain path outside every prefix: forwarded without a credential
    unclear_path,  // no prefix covers a path that some origin may read as another one: refused
    tied,          // two bindings match equally (see find_binding_tie): refused, never picked by order
};

struct RequestBinding {
    Coverage coverage = Coverage::outside;
    std::optional<Binding> binding;  // set when covered
};

// Two bound services of one session that match exactly the same requests,
// described for an error message ("vault 'a' service a/0 (host:443 /v1/)").
struct BindingTie {
    std::string first;
    std::string second;
};

enum class RouteKind { mitm, tunnel, denied };

struct Route {
    RouteKind kind = RouteKind::denied;
    DenyReason reason = DenyReason::none;
};

class GatewayState {
public:
    ShardedTable<Vault> vaults;                  // by name, shared with the snapshots before
    ShardedTable<Session> sessions;              // by id, shared with the snapshots before
    std::optional<std::string> default_session;  // id of the listener's session

    const Session* find_session(std::string_view id) const;
    const Session* default_session_ptr() const;
    // The session still exists and has not expired (checked per request on
    // long-lived connections, between the sweeps that close expired sessions).
    const Session* active_session(std::string_view id, std::chrono::system_clock::time_point now) const;
    // The listener's default session, for a client that names none, when it
    // is unexpired and its source rule admits the client.
    const Session* default_session_for(const std::optional<IpAddress>& client,
                                       std::chrono::system_clock::time_point now) const;

    // Bound services of the session's vaults that cover (host, port), in vault
    // order. Path prefixes are not looked at here (see bindings_for_request).
    std::vector<Binding> bindings_for(const Session& s, std::string_view host, std::uint16_t port) const;

    // The most specific binding that covers the request: an exact host before
    // a wildcard (a longer wildcard before a shorter one), then the longest
    // path_prefix; the vault order never decides.
    RequestBinding binding_for_request(const Session& s, std::string_view host, std::uint16_t port,
                                       std::string_view path) const;

    // Two services of the session's vaults with the same host pattern, port and
    // path_prefix, which no rule could choose between; nullopt when there are none.
    std::optional<BindingTie> find_binding_tie(const Session& s) const;

    // The session of a transparent client (it sends no credentials): of the
    // unexpired sessions pinned to a source range that holds the client, the one
    // with the narrowest range; else the default session when its own source
    // rule lets the client in. Two pinned sessions with one range (refused
    // when made) give no session at all rather than a guess.
    const Session* session_for_source(const std::optional<IpAddress>& client,
                                      std::chrono::system_clock::time_point now) const;

    // CONNECT/plain decision: bound -> mitm, else the policy (name level).
    Route route(const Session& s, const Authority& dest, EgressKind kind) const;
};

// Reads credential values ({env:} / {file:}) and builds the snapshot.
// Missing values are not fatal: they are reported through `warnings` (names only)
// and requests to such a service get 503. Throws ConfigError on an unreadable file.
std::shared_ptr<const GatewayState> build_state(const Config& config, std::vector<std::string>& warnings);

// Sets each minted service's inputs_digest, and builds the redaction tables
// of the vault's redact_response services from their credentials. A credential that occurs in its own placeholder gets none,
// and a warning (names only) when `warnings` is given. With `previous` (the
// same vault in the last published state), a service whose credential and
// auth are unchanged keeps its tables (or their absence, without a new
// warning) instead of building them again. Also reported (names only, and
// only those `previous` did not have): a redacted credential that occurs in
// another credential's placeholder of the vault, or inside another credential
// of the vault, where what the client reads after redaction is ambiguous.
void prepare_services(Vault& vault, std::vector<std::string>* warnings, const Vault* previous = nullptr);

// A digest of everything a minted token depends on: the service's id and
// auth fields, redact_response, and the values of the credentials it reads.
// Rotating any of them gives another digest, so a cached token is dropped.
std::string minting_inputs_digest(const Vault& vault, const ServiceBinding& service);

// True when the two ranges hold the same addresses (an IPv4 range and its
// IPv4-mapped IPv6 spelling are one range): two sessions pinned to one range
// could not be told apart by a transparent client's address.
bool same_source_range(const Cidr& a, const Cidr& b);

}  // namespace vaultgate
