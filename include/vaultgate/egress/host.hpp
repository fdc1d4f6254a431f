#pragma once
// Host and authority normalisation: the one place that turns what a client wrote
// (CONNECT authority, absolute-form URI, Host header, SNI) into the canonical
// destination every decision is made on. Pure functions, no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vaultgate {

enum class HostKind { name, ipv4, ipv6 };

struct Authority {
    std::string host;  // normalised: lower case, no trailing dot, punycode; IPv6 without brackets
    std::uint16_t port = 0;
    HostKind kind = HostKind::name;

    bool operator==(const Authority&) const = default;
};

// Why a host or authority was refused. Every value maps to a 400 except
// ip_literal_form, which is also a 400 but gets its own reason so the refusal
// can say "write the address in dotted-quad form".
enum class HostError {
    empty,
    bad_character,
    label_too_long,
    name_too_long,
    bad_idn,
    ip_literal_form,  // 0x7f.1, 0177.0.0.1, 2130706433, 127.1: numeric but not dotted-quad
    bad_ipv6,
    ipv6_zone,  // fe80::1%eth0: zone ids are never accepted
    bad_port,   // not 1-5 digits, leading zero, 0, > 65535
    missing_port,
};

std::string_view host_error_text(HostError e);

struct HostResult {
    std::optional<std::string> host;
    HostKind kind = HostKind::name;
    HostError error = HostError::empty;
    explicit operator bool() const { return host.has_value(); }
};

// Normalises a bare host (no port). IPv6 may be given with or without brackets.
HostResult normalize_host(std::string_view raw);

struct AuthorityResult {
    std::optional<Authority> authority;
    HostError error = HostError::empty;
    explicit operator bool() const { return authority.has_value(); }
};

// Parses "host:port", "[v6]:port", or (when default_port != 0) a bare host.
// A port is 1-5 digits, no leading zero, 1..65535.
AuthorityResult parse_authority(std::string_view raw, std::uint16_t default_port);

// "[::1]" for IPv6, the host otherwise; with ":port" when port != 0.
std::string format_authority(const Authority& a, bool with_port = true);

}  // namespace vaultgate
