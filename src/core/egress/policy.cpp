#include "vaultgate/egress/policy.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

namespace {

constexpr std::uint16_t k_https_port = 443;
constexpr std::uint16_t k_http_port = 80;

std::optional<DomainRule> rule_error(std::string* error, std::string_view message) {
    if (error) *error = std::string(message);
    return std::nullopt;
}

// The port a rule without one stands for, by how the client asked.
std::uint16_t default_port(EgressKind kind) { return kind == EgressKind::connect ? k_https_port : k_http_port; }

bool port_matches(const DomainRule& rule, std::uint16_t port, EgressKind kind) {
    return port == rule.port.value_or(default_port(kind));
}

enum class RuleMatch { none, host_only, full };

// The best match among `rules`, and the rule that gave it.
struct RuleHit {
    RuleMatch match = RuleMatch::none;
    const DomainRule* rule = nullptr;
};

RuleHit match_rules(const std::vector<DomainRule>& rules, const Authority& dest, EgressKind kind) {
    RuleHit best;
    for (const auto& rule : rules) {
        if (!rule.matches_host(dest.host)) continue;
        if (port_matches(rule, dest.port, kind)) return {RuleMatch::full, &rule};
        if (best.match == RuleMatch::none) best = {RuleMatch::host_only, &rule};
    }
    return best;
}

DestinationVerdict check_ip_literal(const EgressPolicy& policy, const Authority& dest) {
    DestinationVerdict verdict{DenyReason::ip_literal_not_allowed, PolicyKey::allowed_cidrs};
    auto addr = parse_ip_strict(dest.host);
    if (!addr) return verdict;
    for (const auto& cidr : policy.allowed_cidrs) {
        if (cidr.contains(*addr)) return {DenyReason::none, PolicyKey::allowed_cidrs, nullptr, &cidr};
    }
    return verdict;
}

DenyReason deny_for_class(AddressClass c) {
    switch (c) {
        case AddressClass::global:
            return DenyReason::none;
        case AddressClass::metadata:
            return DenyReason::metadata_address;
        case AddressClass::loopback:
            return DenyReason::loopback_address;
        case AddressClass::private_network:
        case AddressClass::cgnat:
        case AddressClass::unique_local:
        case AddressClass::link_local:
        case AddressClass::unspecified:
            return DenyReason::private_address;
        case AddressClass::multicast:
        case AddressClass::broadcast:
        case AddressClass::documentation:
        case AddressClass::reserved:
            return DenyReason::reserved_address;
    }
    return DenyReason::reserved_address;
}

// The advice goes into a response header and a JSON body. The authority is
// normalised, so it holds only these bytes; anything else means a caller
// passed something raw, and then the advice names no destination at all.
bool is_printable_authority(std::string_view s) {
    for (char c : s) {
        bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
                       c == ':' || c == '[' || c == ']';
        if (!allowed) return false;
    }
    return !s.empty();
}

std::string quoted_destination(const Authority& dest) {
    std::string text = format_authority(dest);
    return is_printable_authority(text) ? "\"" + text + "\"" : std::string("this destination");
}

// What to add to allowed_domains: the bare host when its default port is the
// one asked for, "host:port" otherwise.
std::string domain_rule_for(const Authority& dest) {
    bool default_port = dest.port == k_https_port || dest.port == k_http_port;
    std::string text = format_authority(dest, !default_port);
    return is_printable_authority(text) ? "\"" + text + "\"" : std::string("the host");
}

std::string cidr_for(const Authority& dest) {
    if (dest.kind == HostKind::name || !is_printable_authority(dest.host)) return "the address";
    return "\"" + dest.host + (dest.kind == HostKind::ipv6 ? "/128\"" : "/32\"");
}

}  // namespace

std::optional<DomainRule> DomainRule::parse(std::string_view text, std::string* error) {
    if (text.empty()) return rule_error(error, "domain rule is empty");
    DomainRule rule;
    std::string_view rest = text;
    if (rest.substr(0, 2) == "*.") {
        rule.wildcard = true;
        rest.remove_prefix(2);
    }
    if (rest.find('*') != std::string_view::npos)
        return rule_error(error, "'*' is only allowed as the whole first label, as in \"*.example.com\"");
    if (rest.empty()) return rule_error(error, "wildcard rule has no domain after \"*.\"");
    if (rest.front() == '[' || rest.find(':') != rest.rfind(':'))
        return rule_error(error, "IP addresses belong in allowed_cidrs, not allowed_domains");

    HostKind kind = HostKind::name;
    if (rest.find(':') != std::string_view::npos) {
        AuthorityResult parsed = parse_authority(rest, 0);
        if (!parsed) return rule_error(error, host_error_text(parsed.error));
        rule.host = parsed.authority->host;
        rule.port = parsed.authority->port;
        kind = parsed.authority->kind;
    } else {
        HostResult parsed = normalize_host(rest);
        if (!parsed) return rule_error(error, host_error_text(parsed.error));
        rule.host = *parsed.host;
        kind = parsed.kind;
    }
    if (kind != HostKind::name) return rule_error(error, "IP addresses belong in allowed_cidrs, not allowed_domains");
    return rule;
}

bool DomainRule::matches_host(std::string_view normalised_host) const {
    if (!wildcard) return normalised_host == host;
    // A strict subdomain: at least one label, then a dot, then the suffix.
    // The dot check is what keeps "evilexample.com" out of "*.example.com".
    if (normalised_host.size() < host.size() + 2) return false;
    std::size_t dot = normalised_host.size() - host.size() - 1;
    return normalised_host[dot] == '.' && normalised_host.substr(dot + 1) == host;
}

std::string_view deny_reason_name(DenyReason r) {
    switch (r) {
        case DenyReason::none:
            return "none";
        case DenyReason::domain_not_allowed:
            return "domain_not_allowed";
        case DenyReason::port_not_allowed:
            return "port_not_allowed";
        case DenyReason::http_not_allowed:
            return "http_not_allowed";
        case DenyReason::https_not_allowed:
            return "https_not_allowed";
        case DenyReason::ip_literal_not_allowed:
            return "ip_literal_not_allowed";
        case DenyReason::private_address:
            return "private_address";
        case DenyReason::metadata_address:
            return "metadata_address";
        case DenyReason::loopback_address:
            return "loopback_address";
        case DenyReason::reserved_address:
            return "reserved_address";
        case DenyReason::self_connection:
            return "self_connection";
        case DenyReason::resolve_failed:
            return "resolve_failed";
        case DenyReason::session_required:
            return "session_required";
        case DenyReason::destination_mismatch:
            return "destination_mismatch";
        case DenyReason::no_server_name:
            return "no_server_name";
        case DenyReason::path_not_covered:
            return "path_not_covered";
        case DenyReason::sni_mismatch:
            return "sni_mismatch";
    }
    return "unknown";
}

std::string_view policy_key_name(PolicyKey key) {
    switch (key) {
        case PolicyKey::none:
            return "none";
        case PolicyKey::allow_https:
            return "allow_https";
        case PolicyKey::allow_http:
            return "allow_http";
        case PolicyKey::allowed_domains:
            return "allowed_domains";
        case PolicyKey::allow_package_managers:
            return "allow_package_managers";
        case PolicyKey::allowed_cidrs:
            return "allowed_cidrs";
        case PolicyKey::upstream_resolve:
            return "upstream.resolve";
        case PolicyKey::address_class:
            return "address_class";
    }
    return "none";
}

std::string deny_reason_advice(DenyReason r, const Authority& dest) {
    const std::string where = quoted_destination(dest);
    const std::string cidrs = "egress_policies.<policy>.allowed_cidrs";
    switch (r) {
        case DenyReason::none:
            return where + " is allowed.";
        case DenyReason::domain_not_allowed:
            return "To allow " + where + ", add " + domain_rule_for(dest) +
                   " to egress_policies.<policy>.allowed_domains.";
        case DenyReason::port_not_allowed:
            return "The host is allowed but not this port; to allow " + where + ", add " + domain_rule_for(dest) +
                   " to egress_policies.<policy>.allowed_domains.";
        case DenyReason::http_not_allowed:
            return "Plain http to " + where +
                   " is refused; use https, or set egress_policies.<policy>.allow_http to true.";
        case DenyReason::https_not_allowed:
            return "CONNECT tunnels to " + where + " are refused; set egress_policies.<policy>.allow_https to true.";
        case DenyReason::ip_literal_not_allowed:
            return "IP address destinations such as " + where + " are refused; connect by name, or add " +
                   cidr_for(dest) + " to " + cidrs + ".";
        case DenyReason::private_address:
            return where + " resolves to a private, link-local or unspecified address, refused unless " +
                   "the range is listed in " + cidrs + ".";
        case DenyReason::metadata_address:
            return where + " resolves to a cloud metadata address, refused unless it is listed in " + cidrs + ".";
        case DenyReason::loopback_address:
            return where + " resolves to a loopback address, refused unless it is listed in " + cidrs + ".";
        case DenyReason::reserved_address:
            return where + " resolves to a multicast, broadcast, documentation or reserved address, " +
                   "refused unless the range is listed in " + cidrs + ".";
        case DenyReason::self_connection:
            return where + " is one of vaultgate's own listeners (listen.proxy, listen.transparent, " +
                   "listen.admin), which are never reachable through the proxy.";
        case DenyReason::resolve_failed:
            return where + " could not be resolved; check the name, or pin an address for it in " + "upstream.resolve.";
        case DenyReason::session_required:
            return "A session is required: send Proxy-Authorization: Basic session_id:token, or "
                   "configure sessions.default.";
        case DenyReason::destination_mismatch:
            return "The TLS server name " + where +
                   " does not resolve to the address the connection was sent to; the two must agree in "
                   "transparent mode.";
        case DenyReason::no_server_name:
            return std::string(
                "Transparent mode needs a TLS ClientHello with a server name (SNI) that is a host "
                "name; connections without one are refused.");
        case DenyReason::path_not_covered:
            return "The request path to " + where +
                   " has a ';' parameter, a backslash, a dot segment, or an escape of '.', '/', '\\', ';' or "
                   "'%', a control byte or overlong UTF-8, which an origin may read as another path; such a path "
                   "is never matched against a service's path_prefix. Send the path in its plain form.";
        case DenyReason::sni_mismatch:
            return "The TLS server name (SNI) sent through the tunnel to " + where +
                   " names another host; connect to the host the TLS connection is for, or set "
                   "egress_policies.<policy>.tunnel_sni_check to false.";
    }
    return "The destination is refused by egress_policies.<policy>.";
}

DestinationVerdict judge_destination(const EgressPolicy& policy, const Authority& dest, EgressKind kind) {
    if (kind == EgressKind::connect && !policy.allow_https)
        return {DenyReason::https_not_allowed, PolicyKey::allow_https};
    if (kind == EgressKind::plain_http && !policy.allow_http)
        return {DenyReason::http_not_allowed, PolicyKey::allow_http};
    if (dest.kind != HostKind::name) return check_ip_literal(policy, dest);

    RuleHit hit = match_rules(policy.allowed_domains, dest, kind);
    PolicyKey key = PolicyKey::allowed_domains;
    if (hit.match != RuleMatch::full && policy.allow_package_managers) {
        RuleHit bundle = match_rules(package_manager_domains(), dest, kind);
        if (bundle.match != RuleMatch::none) {
            hit = bundle;
            key = PolicyKey::allow_package_managers;
        }
    }
    switch (hit.match) {
        case RuleMatch::full:
            return {DenyReason::none, key, hit.rule};
        case RuleMatch::host_only:
            return {DenyReason::port_not_allowed, key, hit.rule};
        case RuleMatch::none:
            break;
    }
    return {DenyReason::domain_not_allowed, PolicyKey::allowed_domains};
}

DenyReason check_tunnel_sni(const EgressPolicy& policy, const Authority& dest, const HelloResult& hello) {
    switch (hello.status) {
        case HelloStatus::not_tls:
        case HelloStatus::no_sni:
            return DenyReason::none;
        // What vaultgate cannot read (a hello split over records, say) an origin may still take.
        case HelloStatus::incomplete:
        case HelloStatus::malformed:
            return DenyReason::sni_mismatch;
        case HelloStatus::ok:
            break;
    }
    const HostResult name = normalize_host(hello.server_name);
    if (!name) return DenyReason::sni_mismatch;
    if (*name.host == dest.host && name.kind == dest.kind) return DenyReason::none;
    if (dest.kind == HostKind::name || name.kind != HostKind::name) return DenyReason::sni_mismatch;
    const Authority named{*name.host, dest.port, HostKind::name};
    return check_destination(policy, named, EgressKind::connect) == DenyReason::none ? DenyReason::none
                                                                                     : DenyReason::sni_mismatch;
}

AddressVerdict judge_address(const EgressPolicy& policy, const IpAddress& addr, bool operator_pinned) {
    AddressVerdict verdict;
    verdict.address_class = classify_address(addr);
    // An explicit CIDR is the operator saying "yes, this one", so it wins over
    // the class; the caller still refuses the proxy's own listeners.
    for (const auto& cidr : policy.allowed_cidrs) {
        if (cidr.contains(addr)) {
            verdict.key = PolicyKey::allowed_cidrs;
            verdict.cidr = &cidr;
            return verdict;
        }
    }
    if (operator_pinned) {
        verdict.key = PolicyKey::upstream_resolve;
        return verdict;
    }
    verdict.reason = deny_for_class(verdict.address_class);
    return verdict;
}

std::string_view deny_rule(DenyReason reason) {
    switch (reason) {
        case DenyReason::domain_not_allowed:
        case DenyReason::port_not_allowed:
            return "allowed_domains";
        case DenyReason::https_not_allowed:
            return "allow_https";
        case DenyReason::http_not_allowed:
            return "allow_http";
        case DenyReason::ip_literal_not_allowed:
        case DenyReason::private_address:
        case DenyReason::metadata_address:
        case DenyReason::loopback_address:
        case DenyReason::reserved_address:
            return "allowed_cidrs";
        case DenyReason::sni_mismatch:
            return "tunnel_sni_check";
        default:
            return {};
    }
}

std::string named_deny_advice(DenyReason reason, const Authority& dest, std::string_view policy) {
    std::string advice = deny_reason_advice(reason, dest);
    if (policy.empty()) return advice;
    constexpr std::string_view generic = "egress_policies.<policy>";
    const std::string named =
        policy == "inline" ? "the session's inline egress_policy" : "egress_policies." + std::string(policy);
    for (auto at = advice.find(generic); at != std::string::npos; at = advice.find(generic, at + named.size()))
        advice.replace(at, generic.size(), named);
    const std::string_view rule = deny_rule(reason);
    if (rule.empty()) return advice;
    const std::string which =
        policy == "inline" ? "the session's inline egress policy" : "egress policy '" + std::string(policy) + "'";
    return "Refused by " + which + " (" + std::string(rule) + "). " + advice;
}

}  // namespace vaultgate
