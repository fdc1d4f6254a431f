#pragma once
// The egress policy: which destinations a session may reach untouched. Pure
// functions over values; the network layer calls them before it dials.
#include "vaultgate/egress/address.hpp"
#include "vaultgate/egress/client_hello.hpp"
#include "vaultgate/egress/host.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

// "api.example.com", "*.example.com" (subdomains only, never the apex), with an
// optional ":port". Without a port the rule allows 443, and 80 when allow_http.
struct DomainRule {
    std::string host;  // normalised; for wildcards the suffix without "*."
    bool wildcard = false;
    std::optional<std::uint16_t> port;

    static std::optional<DomainRule> parse(std::string_view text, std::string* error);
    bool matches_host(std::string_view normalised_host) const;
};

struct EgressPolicy {
    std::string name;
    bool allow_https = true;
    bool allow_http = false;
    bool allow_package_managers = false;
    std::vector<DomainRule> allowed_domains;
    std::vector<Cidr> allowed_cidrs;
    // A tunnel's TLS ClientHello must name the CONNECT host (check_tunnel_sni).
    bool tunnel_sni_check = true;
};

// How the client asked to go there.
enum class EgressKind {
    connect,     // CONNECT tunnel (TLS expected)
    plain_http,  // absolute-form http:// request
};

// Documented reasons; the names are part of the contract (403 body, header, log).
enum class DenyReason {
    none,
    domain_not_allowed,
    port_not_allowed,
    http_not_allowed,
    https_not_allowed,
    ip_literal_not_allowed,
    private_address,
    metadata_address,
    loopback_address,
    reserved_address,
    self_connection,
    resolve_failed,
    session_required,
    destination_mismatch,  // transparent mode: the SNI name does not resolve to the original destination
    no_server_name,        // transparent mode: no usable SNI (absent, an IP literal, or malformed)
    path_not_covered,      // bound host: a path no path_prefix covers and an origin may read as another path
    sni_mismatch,          // tunnel: the ClientHello names another host than the CONNECT, or cannot be read
};

std::string_view deny_reason_name(DenyReason r);
// One sentence a person or an agent can act on (names the config key that would allow it).
std::string deny_reason_advice(DenyReason r, const Authority& dest);

// The policy key a refusal points at ("allowed_domains", "allow_https", ...);
// empty when no policy key decides it.
std::string_view deny_rule(DenyReason reason);

// The advice naming the policy that refused ("default", or "inline" for a
// session's own policy) in place of the generic "egress_policies.<policy>",
// after "Refused by egress policy 'NAME' (RULE)."; the plain advice when
// `policy` is empty.
std::string named_deny_advice(DenyReason reason, const Authority& dest, std::string_view policy);

// The package-manager bundle (PyPI, npm, Debian/Ubuntu, crates.io, Go, RubyGems, Maven).
const std::vector<DomainRule>& package_manager_domains();

// The setting that decided, so that a decision can be explained by the key
// an operator would change (`vaultgate explain`).
enum class PolicyKey {
    none,
    allow_https,
    allow_http,
    allowed_domains,         // `domain` is the rule that matched, if any
    allow_package_managers,  // `domain` is the bundle's rule that matched
    allowed_cidrs,           // `cidr` is the range that matched, if any
    upstream_resolve,        // the address was pinned by the operator
    address_class,           // the address's class decided
};

// "allow_https", "allowed_domains", "upstream.resolve", "address_class", ...
std::string_view policy_key_name(PolicyKey key);

struct DestinationVerdict {
    DenyReason reason = DenyReason::none;
    PolicyKey key = PolicyKey::none;
    const DomainRule* domain = nullptr;  // points into the policy or the bundle
    const Cidr* cidr = nullptr;          // points into the policy
};

// Name-level decision: may this session reach dest at all? Does not look at addresses.
DestinationVerdict judge_destination(const EgressPolicy& policy, const Authority& dest, EgressKind kind);
inline DenyReason check_destination(const EgressPolicy& policy, const Authority& dest, EgressKind kind) {
    return judge_destination(policy, dest, kind).reason;
}

struct AddressVerdict {
    DenyReason reason = DenyReason::none;
    PolicyKey key = PolicyKey::address_class;
    const Cidr* cidr = nullptr;  // allowed_cidrs: the range that matched
    AddressClass address_class = AddressClass::global;
};

// Address-level decision for one resolved (or literal) address. `operator_pinned`
// is true when the address came from upstream.resolve (operator-chosen, exempt
// from the private-address rule). Self-connections are checked separately by the
// caller, which knows the listeners.
AddressVerdict judge_address(const EgressPolicy& policy, const IpAddress& addr, bool operator_pinned);
inline DenyReason check_address(const EgressPolicy& policy, const IpAddress& addr, bool operator_pinned) {
    return judge_address(policy, addr, operator_pinned).reason;
}

// The ClientHello a client sent first through a tunnel to `dest` (allowed by
// `policy`): a readable hello must name dest's host, or, when dest is an IP
// literal, a host the policy allows on dest's port. Otherwise a sandbox could
// reach a forbidden name on an allowed address (domain fronting). No SNI, or
// bytes that are not TLS, pass. sni_mismatch when refused, else none.
DenyReason check_tunnel_sni(const EgressPolicy& policy, const Authority& dest, const HelloResult& hello);

}  // namespace vaultgate
