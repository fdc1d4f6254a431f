#include "vaultgate/egress/host.hpp"

#include "vaultgate/egress/address.hpp"

#include <idn2.h>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace vaultgate {

namespace {

constexpr std::size_t k_max_label = 63;
constexpr std::size_t k_max_name = 253;

// Every legitimate host, even one written in UTF-8, fits in this: the punycode
// form is at least one byte per code point and a code point is at most four
// bytes. Longer input is refused before libidn2 sees it, because TR46 mapping
// may drop ignorable code points and shrink megabytes down to a valid name.
constexpr std::size_t k_max_raw_host = 4 * k_max_name + 16;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

char to_lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_name_char(char c) {
    // Underscore is not valid in a host name by RFC 952, but real services
    // (SRV-style and some CDN names) use it, and resolvers accept it.
    return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_';
}

bool has_non_ascii(std::string_view s) {
    for (char c : s) {
        if (static_cast<unsigned char>(c) >= 0x80) return true;
    }
    return false;
}

HostResult fail(HostError e) {
    HostResult r;
    r.error = e;
    return r;
}

HostResult ok(std::string host, HostKind kind) {
    HostResult r;
    r.host = std::move(host);
    r.kind = kind;
    return r;
}

bool looks_like_ipv6_text(std::string_view s) {
    for (char c : s) {
        bool hex_or_separator = is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
        if (!hex_or_separator) return false;
    }
    return true;
}

HostResult normalize_ipv6(std::string_view inner) {
    if (inner.find('%') != std::string_view::npos) return fail(HostError::ipv6_zone);
    auto addr = parse_ip_strict(inner);
    if (!addr || !addr->v6) return fail(HostError::bad_ipv6);
    return ok(addr->to_string(), HostKind::ipv6);
}

struct IdnFree {
    void operator()(char* p) const { idn2_free(p); }
};

HostError idn_error(int rc) {
    if (rc == IDN2_TOO_BIG_LABEL) return HostError::label_too_long;
    if (rc == IDN2_TOO_BIG_DOMAIN) return HostError::name_too_long;
    return HostError::bad_idn;
}

// UTF-8 to punycode. Non-transitional first (IDNA2008: "faß.de" stays
// distinct from "fass.de", as browsers now resolve it); transitional as the
// fallback for names only IDNA2003 mapping accepts.
std::optional<std::string> to_ascii(const std::string& utf8, HostError& error) {
    int rc = IDN2_OK;
    for (int mode : {IDN2_NONTRANSITIONAL, IDN2_TRANSITIONAL}) {
        std::uint8_t* out = nullptr;
        int r = idn2_lookup_u8(reinterpret_cast<const std::uint8_t*>(utf8.c_str()), &out, mode | IDN2_NFC_INPUT);
        std::unique_ptr<char, IdnFree> owned(reinterpret_cast<char*>(out));
        if (r == IDN2_OK && owned) return std::string(owned.get());
        if (rc == IDN2_OK) rc = r;
    }
    error = idn_error(rc);
    return std::nullopt;
}

std::optional<HostError> check_labels(std::string_view name) {
    if (name.size() > k_max_name) return HostError::name_too_long;
    std::size_t label_len = 0;
    for (char c : name) {
        if (c == '.') {
            if (label_len == 0) return HostError::bad_character;  // empty label
            label_len = 0;
            continue;
        }
        if (!is_name_char(c)) return HostError::bad_character;
        if (++label_len > k_max_label) return HostError::label_too_long;
    }
    if (label_len == 0) return HostError::bad_character;
    return std::nullopt;
}

std::string_view last_label(std::string_view name) {
    std::size_t dot = name.rfind('.');
    return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

// The WHATWG URL rule, widened: a host whose last label is a number (or
// starts like a hex number) is an IPv4 attempt, never a DNS name. Resolvers
// and libc accept 127.1, 0x7f.1 and 2130706433 as addresses, so every such
// spelling must either be the one strict dotted quad or be refused.
bool looks_like_ipv4(std::string_view name) {
    std::string_view last = last_label(name);
    if (last.size() >= 2 && last[0] == '0' && last[1] == 'x') return true;
    for (char c : last) {
        if (!is_digit(c)) return false;
    }
    return !last.empty();
}

HostResult normalize_name(std::string_view raw) {
    if (raw.size() > k_max_raw_host) return fail(HostError::name_too_long);
    std::string name;
    if (has_non_ascii(raw)) {
        // libidn2 reads a C string; an embedded NUL would silently cut the name.
        if (raw.find('\0') != std::string_view::npos) return fail(HostError::bad_character);
        HostError error = HostError::bad_idn;
        auto ascii = to_ascii(std::string(raw), error);
        if (!ascii) return fail(error);
        name = std::move(*ascii);
    } else {
        name.assign(raw);
    }
    for (char& c : name) c = to_lower_ascii(c);
    // One trailing dot is the fully-qualified spelling of the same name. It is
    // dropped after IDN mapping so an ideographic full stop counts the same.
    if (!name.empty() && name.back() == '.') name.pop_back();
    if (name.empty()) return fail(HostError::empty);
    if (auto e = check_labels(name)) return fail(*e);
    if (looks_like_ipv4(name)) {
        auto addr = parse_ip_strict(name);
        if (!addr || addr->v6) return fail(HostError::ip_literal_form);
        return ok(addr->to_string(), HostKind::ipv4);
    }
    return ok(std::move(name), HostKind::name);
}

// 1-5 digits, no leading zero, 1..65535. "080" and "+80" are refused: other
// parsers disagree on them, and the port is part of what the policy decides.
std::optional<std::uint16_t> parse_port(std::string_view s) {
    if (s.empty() || s.size() > 5 || s[0] == '0') return std::nullopt;
    unsigned value = 0;
    for (char c : s) {
        if (!is_digit(c)) return std::nullopt;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

AuthorityResult authority_fail(HostError e) {
    AuthorityResult r;
    r.error = e;
    return r;
}

// "host[:port]" or "[v6][:port]" split in two; port is nullopt when absent.
struct AuthorityParts {
    std::string_view host;
    std::optional<std::string_view> port;
};

std::optional<AuthorityParts> split_authority(std::string_view raw, HostError& error) {
    AuthorityParts parts;
    std::string_view rest;
    if (!raw.empty() && raw[0] == '[') {
        std::size_t close = raw.find(']');
        if (close == std::string_view::npos) {
            error = HostError::bad_ipv6;
            return std::nullopt;
        }
        parts.host = raw.substr(0, close + 1);
        rest = raw.substr(close + 1);
    } else {
        std::size_t colon = raw.find(':');
        // Two colons without brackets is an IPv6 address whose port cannot be
        // told apart from its last group; RFC 3986 requires the brackets.
        bool several = colon != std::string_view::npos && raw.find(':', colon + 1) != std::string_view::npos;
        if (several && raw.find('%') != std::string_view::npos) {
            error = HostError::ipv6_zone;
            return std::nullopt;
        }
        if (several && looks_like_ipv6_text(raw)) {
            error = HostError::bad_ipv6;
            return std::nullopt;
        }
        parts.host = raw.substr(0, colon);
        rest = colon == std::string_view::npos ? std::string_view{} : raw.substr(colon);
    }
    if (!rest.empty()) {
        if (rest[0] != ':') {
            error = HostError::bad_ipv6;  // bytes after "]" that are not ":port"
            return std::nullopt;
        }
        parts.port = rest.substr(1);
    }
    return parts;
}

}  // namespace

std::string_view host_error_text(HostError e) {
    switch (e) {
        case HostError::empty:
            return "host is empty";
        case HostError::bad_character:
            return "host has a character that is not allowed, or an empty label";
        case HostError::label_too_long:
            return "host has a label longer than 63 bytes";
        case HostError::name_too_long:
            return "host is longer than 253 bytes";
        case HostError::bad_idn:
            return "host is not a valid internationalised domain name";
        case HostError::ip_literal_form:
            return "numeric host is not a dotted-quad IPv4 address (write it as four decimal octets)";
        case HostError::bad_ipv6:
            return "host is not a valid IPv6 address in brackets";
        case HostError::ipv6_zone:
            return "IPv6 zone ids are not accepted";
        case HostError::bad_port:
            return "port must be 1-5 digits without a leading zero, 1 to 65535";
        case HostError::missing_port:
            return "port is missing";
    }
    return "host is malformed";
}

HostResult normalize_host(std::string_view raw) {
    if (raw.empty()) return fail(HostError::empty);
    if (raw.front() == '[') {
        if (raw.size() < 2 || raw.back() != ']') return fail(HostError::bad_ipv6);
        return normalize_ipv6(raw.substr(1, raw.size() - 2));
    }
    // A colon makes it an IPv6 attempt only when every byte could belong to
    // one; "host:443" or "a\r\nb: c" is a name with a bad character.
    if (raw.find(':') != std::string_view::npos) {
        if (raw.find('%') != std::string_view::npos) return fail(HostError::ipv6_zone);
        if (!looks_like_ipv6_text(raw)) return fail(HostError::bad_character);
        return normalize_ipv6(raw);
    }
    return normalize_name(raw);
}

AuthorityResult parse_authority(std::string_view raw, std::uint16_t default_port) {
    if (raw.empty()) return authority_fail(HostError::empty);
    HostError error = HostError::empty;
    auto parts = split_authority(raw, error);
    if (!parts) return authority_fail(error);
    HostResult host = normalize_host(parts->host);
    if (!host) return authority_fail(host.error);
    std::uint16_t port = default_port;
    if (parts->port) {
        auto parsed = parse_port(*parts->port);
        if (!parsed) return authority_fail(HostError::bad_port);
        port = *parsed;
    } else if (default_port == 0) {
        return authority_fail(HostError::missing_port);
    }
    AuthorityResult r;
    r.authority = Authority{std::move(*host.host), port, host.kind};
    return r;
}

std::string format_authority(const Authority& a, bool with_port) {
    std::string out = a.kind == HostKind::ipv6 ? "[" + a.host + "]" : a.host;
    if (with_port && a.port != 0) out += ":" + std::to_string(a.port);
    return out;
}

}  // namespace vaultgate
