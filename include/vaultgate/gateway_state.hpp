#pragma once
// What the proxy decides with: vaults (credentials + bound services), sessions
// and their egress policies, in one immutable snapshot. Writers (startup,
// SIGHUP, the admin API) build a new snapshot and swap it in; each request reads
// the snapshot current when it starts, so a rotation applies to the next request.
#include "vaultgate/config.hpp"
#include "vaultgate/policy.hpp"
#include "vaultgate/redact.hpp"
#include "vaultgate/secret.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate {

struct ServiceBinding {
    std::string id;           // "<vault>/<index>" for config services
    ServiceConfig config;
    // redact_response: the tables that scrub the credential from responses,
    // built once when the state is made (prepare_redaction). Null when the
    // service does not redact, the credential is missing, or the credential
    // occurs in its own placeholder (requests are then refused with 502).
    std::shared_ptr<const RedactionPatterns> redaction;
};

struct Vault {
    std::string id;
    std::string name;
    bool from_config = false;
    std::map<std::string, Secret> credentials;   // a name with no value is absent
    std::vector<ServiceBinding> services;
};

struct Session {
    std::string id;                       // "default" for the listener's default session
    std::vector<std::string> vault_names;
    EgressPolicy policy;
    // Sessions made through the admin API: the token's SHA-256 (hex; the token
    // itself is never kept), when it stops working, and an optional source pin.
    std::string token_digest;             // empty for config sessions (no token)
    std::optional<std::chrono::system_clock::time_point> expires_at;
    std::optional<Cidr> source;
};

// One bound service that matches a destination, with what injection needs.
struct Binding {
    const Vault* vault = nullptr;
    const ServiceBinding* service = nullptr;
    const Secret* secret = nullptr;       // null when the credential is missing
};

enum class RouteKind { mitm, tunnel, denied };

struct Route {
    RouteKind kind = RouteKind::denied;
    DenyReason reason = DenyReason::none;
};

class GatewayState {
public:
    std::map<std::string, Vault> vaults;          // by name
    std::map<std::string, Session> sessions;      // by id
    std::optional<std::string> default_session;   // id of the listener's session

    const Session* find_session(std::string_view id) const;
    const Session* default_session_ptr() const;

    // Bound services of the session's vaults that cover (host, port), in vault
    // order. Path prefixes are not looked at here (see bindings_for_request).
    std::vector<Binding> bindings_for(const Session& s, std::string_view host, std::uint16_t port) const;

    // The first binding whose path_prefix covers the request path, or none.
    std::optional<Binding> binding_for_request(const Session& s, std::string_view host,
                                               std::uint16_t port, std::string_view path) const;

    // CONNECT/plain decision: bound -> mitm, else the policy (name level).
    Route route(const Session& s, const Authority& dest, EgressKind kind) const;
};

// Reads credential values ({env:} / {file:}) and builds the snapshot.
// Missing values are not fatal: they are reported through `warnings` (names only)
// and requests to such a service get 503. Throws ConfigError on an unreadable file.
std::shared_ptr<const GatewayState> build_state(const Config& config, std::vector<std::string>& warnings);

// Builds the redaction tables of the vault's redact_response services from
// their credentials. A credential that occurs in its own placeholder gets none,
// and a warning (names only) when `warnings` is given. With `previous` (the
// same vault in the last published state), a service whose credential and
// auth are unchanged keeps its tables (or their absence, without a new
// warning) instead of building them again.
void prepare_redaction(Vault& vault, std::vector<std::string>* warnings, const Vault* previous = nullptr);

// True when path lies under prefix ("/" covers everything; "/api" covers
// "/api" and "/api/..." but not "/apix"). A query string is ignored; under any
// prefix but "/", a path with a "." or ".." segment (also %2e-encoded) is not
// covered, since the origin may resolve it to outside the prefix.
bool path_has_prefix(std::string_view path, std::string_view prefix);

}  // namespace vaultgate
