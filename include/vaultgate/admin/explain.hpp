#pragma once
// What vaultgate would do with a request, without sending it (POST /v1/explain,
// `vaultgate explain`). The decision is the proxy's own: GatewayState::route,
// decide_bound_request / decide_plain_request and the egress policy's checks
// are asked, and this file only names the setting that decided. Resolving the
// name is the network layer's job (the proxy's resolver and upstream.resolve):
// it judges each address as the dialer does, and settle_addresses() folds the
// verdicts in.
#include "vaultgate/egress/policy.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vaultgate::admin {

// The body of POST /v1/explain.
struct ExplainQuery {
    std::string url;                     // https://host[:port]/path or http://host[:port]/path
    std::optional<std::string> session;  // none: the listener's default session
    std::string method = "GET";
};

// Refuses (ApiError 400) a body that is not {"url", "session"?, "method"?}.
ExplainQuery parse_explain_query(const std::string& body);

// The setting an operator would change: {"allowed_domains", "api.x.com"},
// {"allow_https", "false"}, {"address_class", "private_network"}, ...
struct DecidingKey {
    std::string key;
    std::string value;  // empty when no entry of the list matched
};

// The bound service whose credential would go in; names only, never a value.
struct ExplainedBinding {
    std::string vault;
    std::string vault_id;
    std::string service;  // the service id
    std::string host;     // as configured: exact or "*.example.com"
    std::uint16_t port = 0;
    std::string path_prefix;
    std::string auth_type;   // "api-key", "bearer", ...
    std::string credential;  // the credential's name (the secret input of signed and minted types)
    std::vector<std::string> credentials;  // every credential the auth type reads
    bool credential_set = false;           // all of them have a value
    bool redact_response = false;
};

struct ExplainedAddress {
    std::string address;
    std::string address_class;  // address_class_name()
    DenyReason reason = DenyReason::none;
    DecidingKey decided_by;
};

struct Explanation {
    // The request, normalised as the proxy normalises it.
    std::string method;
    std::string scheme;  // "https" (CONNECT) or "http" (plain proxy request)
    Authority destination;
    std::string path;  // without the query, as the access log writes it

    std::optional<std::string> session;  // none: no session would be found (407)
    std::optional<std::string> policy;   // the session's egress policy; none for an inline one
    EgressPolicy policy_rules;           // what the addresses are checked against

    std::string action;                  // "mitm", "tunnel", "http" (a plain request forwarded) or "denied"
    int status = 0;                      // the status vaultgate answers with itself; 0: the request goes on
    std::string reason;                  // why it answers itself: the deny reason or the refusal's code
    DenyReason deny = DenyReason::none;  // set for a 403 denial and for session_required
    DecidingKey decided_by;
    std::optional<ExplainedBinding> binding;

    // Set by settle_addresses(); no resolution without a session.
    bool resolved = false;
    std::string address_source;  // "literal", "upstream.resolve" or "dns"
    std::string resolve_error;   // empty, "resolve_failed" or "resolve_timeout"
    std::vector<ExplainedAddress> addresses;

    // Whether the proxy would go on to resolve and dial (no refusal yet).
    bool would_dial() const { return session && status == 0; }
};

// The name-level and request-level decision for `query`, as the proxy makes it
// with `state` at `now`. ApiError 400 for a URL the proxy would refuse to parse,
// 404 for a session that does not exist (or has expired).
Explanation explain_request(const GatewayState& state, const ExplainQuery& query,
                            std::chrono::system_clock::time_point now);

// The destination's addresses as the network layer found and judged them.
struct ExplainResolution {
    std::string source;                                           // "literal", "upstream.resolve" or "dns"
    std::string error;                                            // empty, "resolve_failed" or "resolve_timeout"
    std::vector<std::pair<IpAddress, AddressVerdict>> addresses;  // in the order they would be dialled
};

// Folds the addresses in. When the proxy would dial, as dial_checked does: a
// failed lookup is a 502 (504 on timeout), and the first denied address denies
// the request; otherwise the addresses are shown but decide nothing.
void settle_addresses(Explanation& explanation, const ExplainResolution& resolution);

// The JSON POST /v1/explain answers with (docs/reference/admin-api.md).
nlohmann::ordered_json explanation_json(const Explanation& explanation);

}  // namespace vaultgate::admin
