// Fuzzes host normalisation, authority parsing, strict IP parsing, address
// classification, CIDRs and domain rules: every policy decision is made on what
// these return, so a result that another parser (the resolver, libc, the
// origin) would read differently is an SSRF or allow-list bypass.
#include "fuzz_check.hpp"

#include "vaultgate/egress/address.hpp"
#include "vaultgate/egress/host.hpp"
#include "vaultgate/egress/policy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

using namespace vaultgate;
using vaultgate::fuzz::as_view;
using vaultgate::fuzz::is_plain_reason;

namespace {

bool canonical_chars(std::string_view s) {
    for (char c : s) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == ':';
        if (!ok) return false;
    }
    return true;
}

// libc's reading of a text address, as a second opinion: inet_aton takes every
// legacy IPv4 spelling (127.1, 0x7f.1, 0177.0.0.1, 2130706433) that a resolver
// library would also take.
bool libc_reads_as_ipv4(const std::string& s) {
    in_addr a{};
    return inet_aton(s.c_str(), &a) != 0;
}

bool libc_agrees(const IpAddress& addr, const std::string& text) {
    if (addr.v6) {
        in6_addr a{};
        return inet_pton(AF_INET6, text.c_str(), &a) == 1 && std::memcmp(&a, addr.bytes.data(), 16) == 0;
    }
    in_addr a{};
    return inet_pton(AF_INET, text.c_str(), &a) == 1 && std::memcmp(&a, addr.bytes.data(), 4) == 0;
}

// A normalised host is what the policy compares and what is dialled, so it
// must be a fixed point and must mean the same thing to libc.
void check_normalised(const std::string& host, HostKind kind) {
    FUZZ_CHECK(!host.empty() && canonical_chars(host));
    const std::optional<IpAddress> ip = parse_ip_strict(host);
    switch (kind) {
        case HostKind::name:
            // A name that libc would take as an address would be checked as a name
            // and dialled as an address: the allow list and the private-address
            // rule would both be bypassed.
            FUZZ_CHECK(!ip);
            FUZZ_CHECK(!libc_reads_as_ipv4(host));
            FUZZ_CHECK(host.size() <= 253 && host.find(':') == std::string::npos);
            FUZZ_CHECK(host.front() != '.' && host.back() != '.' && host.find("..") == std::string::npos);
            break;
        case HostKind::ipv4:
        case HostKind::ipv6:
            FUZZ_CHECK(ip && ip->v6 == (kind == HostKind::ipv6));
            FUZZ_CHECK(ip->to_string() == host);
            FUZZ_CHECK(libc_agrees(*ip, host));
            break;
    }
    const HostResult again = normalize_host(host);
    FUZZ_CHECK(again && *again.host == host && again.kind == kind);
    if (kind == HostKind::ipv6) {
        const HostResult bracketed = normalize_host("[" + host + "]");
        FUZZ_CHECK(bracketed && *bracketed.host == host && bracketed.kind == kind);
    }
}

IpAddress embed_v4(std::initializer_list<std::uint8_t> prefix, std::size_t at, const IpAddress& v4) {
    IpAddress a;
    a.v6 = true;
    std::size_t i = 0;
    for (std::uint8_t b : prefix) a.bytes[i++] = b;
    for (std::size_t k = 0; k < 4; ++k) a.bytes[at + k] = v4.bytes[k];
    return a;
}

// Ranges that must never come out as "global": reaching any of them is the
// whole point of an SSRF.
bool must_not_be_global(const IpAddress& a) {
    const auto& b = a.bytes;
    if (!a.v6) {
        return b[0] == 0 || b[0] == 10 || b[0] == 127 || (b[0] == 169 && b[1] == 254) ||
               (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
               (b[0] == 100 && (b[1] & 0xc0) == 64) || b[0] >= 224;
    }
    bool zero_prefix = true;
    for (std::size_t i = 0; i < 15; ++i) zero_prefix = zero_prefix && b[i] == 0;
    if (zero_prefix && b[15] <= 1) return true;              // :: and ::1
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // fe80::/10
    if ((b[0] & 0xfe) == 0xfc) return true;                  // fc00::/7
    return b[0] == 0xff;                                     // ff00::/8
}

void check_address(const IpAddress& addr) {
    const AddressClass c = classify_address(addr);
    FUZZ_CHECK(is_plain_reason(address_class_name(c)));
    if (must_not_be_global(addr)) FUZZ_CHECK(c != AddressClass::global);
    if (!addr.v6) {
        // IPv6 spellings of an IPv4 address go to the same place, so they must
        // get the same verdict: mapped, NAT64 and 6to4.
        FUZZ_CHECK(classify_address(embed_v4({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12, addr)) == c);
        FUZZ_CHECK(classify_address(embed_v4({0, 0x64, 0xff, 0x9b}, 12, addr)) == c);
        FUZZ_CHECK(classify_address(embed_v4({0x20, 0x02}, 2, addr)) == c);
    }
}

void fuzz_ip(std::string_view in) {
    const std::optional<IpAddress> ip = parse_ip_strict(in);
    if (ip) {
        const std::string text = ip->to_string();
        FUZZ_CHECK(parse_ip_strict(text) == ip);
        FUZZ_CHECK(libc_agrees(*ip, std::string(in)));
        check_address(*ip);
    } else if (in.size() >= 2) {
        // Arbitrary bytes as an address, so classification sees every prefix.
        IpAddress raw;
        raw.v6 = (in[0] & 1) != 0;
        for (std::size_t i = 0; i < raw.bytes.size() && i + 1 < in.size(); ++i)
            raw.bytes[i] = static_cast<std::uint8_t>(in[i + 1]);
        if (!raw.v6) std::fill(raw.bytes.begin() + 4, raw.bytes.end(), 0);
        check_address(raw);
    }

    const std::optional<Cidr> cidr = parse_cidr(in);
    if (cidr) {
        FUZZ_CHECK(cidr->prefix_len >= 0 && cidr->prefix_len <= (cidr->base.v6 ? 128 : 32));
        FUZZ_CHECK(cidr->contains(cidr->base));
        if (!cidr->base.v6)
            FUZZ_CHECK(cidr->contains(embed_v4({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12, cidr->base)));
    }
}

void fuzz_host_and_authority(std::string_view in) {
    const HostResult h = normalize_host(in);
    if (h)
        check_normalised(*h.host, h.kind);
    else
        FUZZ_CHECK(is_plain_reason(host_error_text(h.error)));

    const AuthorityResult strict = parse_authority(in, 0);
    const AuthorityResult defaulted = parse_authority(in, 443);
    for (const AuthorityResult* r : {&strict, &defaulted}) {
        if (!*r) {
            FUZZ_CHECK(is_plain_reason(host_error_text(r->error)));
            continue;
        }
        const Authority& a = *r->authority;
        FUZZ_CHECK(a.port != 0);
        check_normalised(a.host, a.kind);
        const AuthorityResult back = parse_authority(format_authority(a), 0);
        FUZZ_CHECK(back && *back.authority == a);
    }
    // A default port only fills in a missing one.
    if (strict) FUZZ_CHECK(defaulted && *defaulted.authority == *strict.authority);
    if (!strict && defaulted) FUZZ_CHECK(strict.error == HostError::missing_port && defaulted.authority->port == 443);
}

void fuzz_domain_rule(std::string_view in) {
    // "rule\nhost": the second line, if any, is a host to match against the rule.
    const std::size_t nl = in.find('\n');
    const std::string_view rule_text = in.substr(0, nl);
    const std::string_view host_text = nl == std::string_view::npos ? in : in.substr(nl + 1);

    std::string error;
    const std::optional<DomainRule> rule = DomainRule::parse(rule_text, &error);
    if (!rule) {
        FUZZ_CHECK(is_plain_reason(error, 200));
        return;
    }
    FUZZ_CHECK(!rule->port || *rule->port != 0);
    check_normalised(rule->host, HostKind::name);
    FUZZ_CHECK(rule->matches_host(rule->host) == !rule->wildcard);  // never the apex of a wildcard
    FUZZ_CHECK(rule->matches_host("x." + rule->host) == rule->wildcard);
    FUZZ_CHECK(!rule->matches_host("x" + rule->host));  // "evilexample.com"
    FUZZ_CHECK(!rule->matches_host(rule->host + "."));

    const HostResult h = normalize_host(host_text);
    if (!h) return;
    const std::string& name = *h.host;
    const bool expected =
        rule->wildcard ? name.size() > rule->host.size() + 1 && name.ends_with("." + rule->host) : name == rule->host;
    FUZZ_CHECK(rule->matches_host(name) == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in = as_view(data, size);
    fuzz_host_and_authority(in);
    fuzz_ip(in);
    fuzz_domain_rule(in);
    return 0;
}
