#include "vaultgate/egress/address.hpp"

#include "vaultgate/util/encoding.hpp"

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vaultgate {

namespace {

bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }

// One decimal octet: 1-3 digits, no leading zero, at most 255. Leading zeros are
// refused because other parsers read them as octal, and "0177" must never mean
// something different here than it does to the resolver behind us.
std::optional<std::uint8_t> parse_octet(std::string_view s) {
    if (s.empty() || s.size() > 3) return std::nullopt;
    if (s.size() > 1 && s[0] == '0') return std::nullopt;
    int value = 0;
    for (char c : s) {
        if (!is_decimal_digit(c)) return std::nullopt;
        value = value * 10 + (c - '0');
    }
    if (value > 255) return std::nullopt;
    return static_cast<std::uint8_t>(value);
}

std::optional<std::array<std::uint8_t, 4>> parse_dotted_quad(std::string_view s) {
    std::array<std::uint8_t, 4> out{};
    for (std::size_t i = 0; i < 4; ++i) {
        std::size_t dot = s.find('.');
        bool last = i == 3;
        if (last != (dot == std::string_view::npos)) return std::nullopt;
        auto octet = parse_octet(last ? s : s.substr(0, dot));
        if (!octet) return std::nullopt;
        out[i] = *octet;
        if (!last) s.remove_prefix(dot + 1);
    }
    return out;
}

// A colon-separated run of groups (one side of "::"). The last group of the
// whole address may be a dotted quad, which fills two groups.
struct GroupRun {
    std::array<std::uint16_t, 8> groups{};
    std::size_t count = 0;
};

std::optional<std::uint16_t> parse_hex_group(std::string_view s) {
    if (s.empty() || s.size() > 4) return std::nullopt;
    unsigned value = 0;
    for (char c : s) {
        int v = hex_digit_value(c);
        if (v < 0) return std::nullopt;
        value = value * 16 + static_cast<unsigned>(v);
    }
    return static_cast<std::uint16_t>(value);
}

bool append_group(GroupRun& run, std::uint16_t value) {
    if (run.count >= 8) return false;
    run.groups[run.count++] = value;
    return true;
}

std::optional<GroupRun> parse_group_run(std::string_view s, bool may_end_in_ipv4) {
    GroupRun run;
    if (s.empty()) return run;
    while (true) {
        std::size_t colon = s.find(':');
        std::string_view part = s.substr(0, colon);
        bool last = colon == std::string_view::npos;
        if (last && may_end_in_ipv4 && part.find('.') != std::string_view::npos) {
            auto quad = parse_dotted_quad(part);
            if (!quad) return std::nullopt;
            if (!append_group(run, static_cast<std::uint16_t>((*quad)[0] << 8 | (*quad)[1])) ||
                !append_group(run, static_cast<std::uint16_t>((*quad)[2] << 8 | (*quad)[3])))
                return std::nullopt;
            return run;
        }
        auto group = parse_hex_group(part);
        if (!group || !append_group(run, *group)) return std::nullopt;
        if (last) return run;
        s.remove_prefix(colon + 1);
    }
}

std::optional<IpAddress> parse_ipv6(std::string_view s) {
    // Zone ids are refused outright: they name an interface on *this* host and
    // would let a client pick which link a link-local address is reached on.
    if (s.find('%') != std::string_view::npos) return std::nullopt;
    std::size_t gap = s.find("::");
    GroupRun head, tail;
    if (gap == std::string_view::npos) {
        auto run = parse_group_run(s, true);
        if (!run || run->count != 8) return std::nullopt;
        head = *run;
    } else {
        std::string_view left = s.substr(0, gap);
        std::string_view right = s.substr(gap + 2);
        if (right.find("::") != std::string_view::npos) return std::nullopt;
        auto l = parse_group_run(left, false);
        auto r = parse_group_run(right, true);
        // "::" stands for at least one zero group.
        if (!l || !r || l->count + r->count > 7) return std::nullopt;
        head = *l;
        tail = *r;
    }
    IpAddress addr;
    addr.v6 = true;
    auto put = [&addr](std::size_t index, std::uint16_t value) {
        addr.bytes[index * 2] = static_cast<std::uint8_t>(value >> 8);
        addr.bytes[index * 2 + 1] = static_cast<std::uint8_t>(value & 0xff);
    };
    for (std::size_t i = 0; i < head.count; ++i) put(i, head.groups[i]);
    for (std::size_t i = 0; i < tail.count; ++i) put(8 - tail.count + i, tail.groups[i]);
    return addr;
}

std::uint16_t group_at(const IpAddress& a, std::size_t index) {
    return static_cast<std::uint16_t>(a.bytes[index * 2] << 8 | a.bytes[index * 2 + 1]);
}

bool starts_with_bytes(const IpAddress& a, std::initializer_list<std::uint8_t> prefix) {
    std::size_t i = 0;
    for (std::uint8_t b : prefix) {
        if (a.bytes[i++] != b) return false;
    }
    return true;
}

// True when the first `bits` bits of a and b agree (both of the same family).
bool prefix_equal(const IpAddress& a, const IpAddress& b, int bits) {
    int whole = bits / 8;
    for (int i = 0; i < whole; ++i) {
        if (a.bytes[i] != b.bytes[i]) return false;
    }
    int rest = bits % 8;
    if (rest == 0) return true;
    auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a.bytes[whole] & mask) == (b.bytes[whole] & mask);
}

IpAddress v4_from(const IpAddress& a, std::size_t offset) {
    return IpAddress::v4(a.bytes[offset], a.bytes[offset + 1], a.bytes[offset + 2], a.bytes[offset + 3]);
}

bool is_v4_mapped(const IpAddress& a) {
    return a.v6 && starts_with_bytes(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff});
}

struct V4Range {
    std::uint8_t a, b, c, d;
    int prefix_len;
    AddressClass cls;
};

// Order matters: the first match wins, so the single metadata addresses come
// before the ranges that contain them.
constexpr V4Range k_v4_ranges[] = {
    {169, 254, 169, 254, 32, AddressClass::metadata},  // AWS, GCP, Azure, OpenStack
    {169, 254, 170, 2, 32, AddressClass::metadata},    // AWS ECS task metadata
    {100, 100, 100, 200, 32, AddressClass::metadata},  // Alibaba Cloud
    {255, 255, 255, 255, 32, AddressClass::broadcast},
    {0, 0, 0, 0, 8, AddressClass::unspecified},  // "this network"; 0.0.0.0 reaches the local host on Linux
    {127, 0, 0, 0, 8, AddressClass::loopback},
    {10, 0, 0, 0, 8, AddressClass::private_network},
    {172, 16, 0, 0, 12, AddressClass::private_network},
    {192, 168, 0, 0, 16, AddressClass::private_network},
    {100, 64, 0, 0, 10, AddressClass::cgnat},
    {169, 254, 0, 0, 16, AddressClass::link_local},
    {192, 0, 2, 0, 24, AddressClass::documentation},
    {198, 51, 100, 0, 24, AddressClass::documentation},
    {203, 0, 113, 0, 24, AddressClass::documentation},
    {192, 0, 0, 0, 24, AddressClass::reserved},    // IETF protocol assignments
    {192, 88, 99, 0, 24, AddressClass::reserved},  // deprecated 6to4 relay anycast
    {198, 18, 0, 0, 15, AddressClass::reserved},   // benchmarking
    {224, 0, 0, 0, 4, AddressClass::multicast},
    {240, 0, 0, 0, 4, AddressClass::reserved},
};

AddressClass classify_v4(const IpAddress& addr) {
    for (const auto& r : k_v4_ranges) {
        if (prefix_equal(addr, IpAddress::v4(r.a, r.b, r.c, r.d), r.prefix_len)) return r.cls;
    }
    return AddressClass::global;
}

// The IPv4 addresses an IPv6 address carries, by the well-known embedding
// forms. Up to two (Teredo names both its server and its client).
struct Embedded {
    std::array<IpAddress, 2> addrs{};
    std::size_t count = 0;
    void add(const IpAddress& a) { addrs[count++] = a; }
};

Embedded embedded_v4(const IpAddress& a) {
    Embedded e;
    if (starts_with_bytes(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})) {
        e.add(v4_from(a, 12));  // IPv4-mapped ::ffff:0:0/96
    } else if (starts_with_bytes(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})) {
        e.add(v4_from(a, 12));  // IPv4-compatible ::/96
    } else if (starts_with_bytes(a, {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) {
        e.add(v4_from(a, 12));  // NAT64 well-known 64:ff9b::/96
    } else if (starts_with_bytes(a, {0, 0x64, 0xff, 0x9b, 0, 1})) {
        e.add(v4_from(a, 12));  // NAT64 local-use 64:ff9b:1::/48
    } else if (starts_with_bytes(a, {0x20, 0x02})) {
        e.add(v4_from(a, 2));  // 6to4 2002::/16
    } else if (starts_with_bytes(a, {0x20, 0x01, 0, 0})) {
        // Teredo: the client address is stored inverted; the server is plain.
        IpAddress client = v4_from(a, 12);
        for (std::size_t i = 0; i < 4; ++i) client.bytes[i] = static_cast<std::uint8_t>(~client.bytes[i]);
        e.add(client);
        e.add(v4_from(a, 4));
    }
    return e;
}

struct V6Range {
    std::array<std::uint8_t, 16> base;
    int prefix_len;
    AddressClass cls;
};

constexpr V6Range k_v6_ranges[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54},
     128,
     AddressClass::metadata},  // AWS IMDS over IPv6
    {{0xff}, 8, AddressClass::multicast},
    {{0xfe, 0x80}, 10, AddressClass::link_local},
    {{0xfc}, 7, AddressClass::unique_local},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, AddressClass::documentation},
    {{0x3f, 0xff}, 20, AddressClass::documentation},               // RFC 9637
    {{0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64, AddressClass::reserved},  // discard-only
    {{0x20, 0x01, 0x00, 0x02, 0, 0}, 48, AddressClass::reserved},  // benchmarking
    {{0x20, 0x01, 0x00, 0x10}, 28, AddressClass::reserved},        // ORCHID (deprecated)
    {{0x5f, 0x00}, 16, AddressClass::reserved},                    // SRv6 SIDs
};

bool is_all_zero_but_last(const IpAddress& a, std::uint8_t last) {
    return starts_with_bytes(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) && a.bytes[15] == last;
}

AddressClass classify_v6(const IpAddress& addr) {
    if (is_all_zero_but_last(addr, 0)) return AddressClass::unspecified;
    if (is_all_zero_but_last(addr, 1)) return AddressClass::loopback;
    Embedded e = embedded_v4(addr);
    if (e.count > 0) {
        // An embedded private or metadata address is what a translator or
        // tunnel would reach, so it decides the class of the whole address.
        for (std::size_t i = 0; i < e.count; ++i) {
            AddressClass c = classify_v4(e.addrs[i]);
            if (c != AddressClass::global) return c;
        }
        return AddressClass::global;
    }
    for (const auto& r : k_v6_ranges) {
        IpAddress base;
        base.v6 = true;
        base.bytes = r.base;
        if (prefix_equal(addr, base, r.prefix_len)) return r.cls;
    }
    // Only 2000::/3 is allocated for global unicast; anything else is not a
    // destination a sandbox has a reason to reach.
    if ((addr.bytes[0] & 0xe0) != 0x20) return AddressClass::reserved;
    return AddressClass::global;
}

std::string hex_group(std::uint16_t g) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
        int nibble = (g >> shift) & 0xf;
        if (nibble != 0 || started || shift == 0) {
            out += digits[nibble];
            started = true;
        }
    }
    return out;
}

std::string v4_text(const IpAddress& a, std::size_t offset) {
    return std::to_string(a.bytes[offset]) + '.' + std::to_string(a.bytes[offset + 1]) + '.' +
           std::to_string(a.bytes[offset + 2]) + '.' + std::to_string(a.bytes[offset + 3]);
}

// RFC 5952 section 4.2: the longest run of two or more zero groups, the first
// one on a tie.
std::pair<std::size_t, std::size_t> longest_zero_run(const IpAddress& a, std::size_t groups) {
    std::size_t best_start = 0, best_len = 0;
    for (std::size_t i = 0; i < groups;) {
        if (group_at(a, i) != 0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < groups && group_at(a, j) == 0) ++j;
        if (j - i > best_len) {
            best_start = i;
            best_len = j - i;
        }
        i = j;
    }
    if (best_len < 2) return {0, 0};
    return {best_start, best_len};
}

std::string v6_text(const IpAddress& a) {
    // RFC 5952 section 5: IPv4-mapped addresses are written in mixed notation.
    bool mixed = is_v4_mapped(a);
    std::size_t groups = mixed ? 6 : 8;
    auto [run_start, run_len] = longest_zero_run(a, groups);
    std::string out;
    for (std::size_t i = 0; i < groups;) {
        if (run_len > 0 && i == run_start) {
            out += "::";
            i += run_len;
            continue;
        }
        if (!out.empty() && out.back() != ':') out += ':';
        out += hex_group(group_at(a, i));
        ++i;
    }
    if (mixed) {
        if (out.back() != ':') out += ':';
        out += v4_text(a, 12);
    }
    return out;
}

}  // namespace

IpAddress IpAddress::v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    IpAddress addr;
    addr.bytes[0] = a;
    addr.bytes[1] = b;
    addr.bytes[2] = c;
    addr.bytes[3] = d;
    return addr;
}

std::string IpAddress::to_string() const { return v6 ? v6_text(*this) : v4_text(*this, 0); }

std::optional<IpAddress> parse_ip_strict(std::string_view text) {
    if (text.find(':') != std::string_view::npos) return parse_ipv6(text);
    auto quad = parse_dotted_quad(text);
    if (!quad) return std::nullopt;
    return IpAddress::v4((*quad)[0], (*quad)[1], (*quad)[2], (*quad)[3]);
}

std::string_view address_class_name(AddressClass c) {
    switch (c) {
        case AddressClass::global:
            return "global";
        case AddressClass::loopback:
            return "loopback";
        case AddressClass::unspecified:
            return "unspecified";
        case AddressClass::link_local:
            return "link_local";
        case AddressClass::metadata:
            return "metadata";
        case AddressClass::private_network:
            return "private_network";
        case AddressClass::cgnat:
            return "cgnat";
        case AddressClass::unique_local:
            return "unique_local";
        case AddressClass::multicast:
            return "multicast";
        case AddressClass::broadcast:
            return "broadcast";
        case AddressClass::documentation:
            return "documentation";
        case AddressClass::reserved:
            return "reserved";
    }
    return "unknown";
}

AddressClass classify_address(const IpAddress& addr) { return addr.v6 ? classify_v6(addr) : classify_v4(addr); }

bool Cidr::contains(const IpAddress& addr) const {
    // A hand-built Cidr with an impossible length matches nothing rather than
    // reading past the address.
    if (prefix_len < 0 || prefix_len > (base.v6 ? 128 : 32)) return false;
    if (base.v6 == addr.v6) return prefix_equal(addr, base, prefix_len);
    // A client can spell an IPv4 destination as ::ffff:a.b.c.d; an operator who
    // allowed the IPv4 range meant that address too.
    if (!base.v6 && is_v4_mapped(addr)) return prefix_equal(v4_from(addr, 12), base, prefix_len);
    return false;
}

std::optional<Cidr> parse_cidr(std::string_view text) {
    std::size_t slash = text.find('/');
    auto addr = parse_ip_strict(text.substr(0, slash));
    if (!addr) return std::nullopt;
    int max_len = addr->v6 ? 128 : 32;
    int len = max_len;
    if (slash != std::string_view::npos) {
        std::string_view digits = text.substr(slash + 1);
        if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
        len = 0;
        for (char c : digits) {
            if (!is_decimal_digit(c)) return std::nullopt;
            len = len * 10 + (c - '0');
        }
        if (len > max_len) return std::nullopt;
    }
    // Host bits are cleared so that "10.1.2.3/8" and "10.0.0.0/8" are one rule;
    // contains() would agree either way, but equality and printing should too.
    Cidr cidr{*addr, len};
    std::size_t total = addr->v6 ? 16 : 4;
    for (std::size_t i = 0; i < total; ++i) {
        int bit_start = static_cast<int>(i) * 8;
        if (bit_start >= len) {
            cidr.base.bytes[i] = 0;
        } else if (bit_start + 8 > len) {
            cidr.base.bytes[i] &= static_cast<std::uint8_t>(0xff << (8 - (len - bit_start)));
        }
    }
    return cidr;
}

namespace {

// The kernel takes ::ffff:a.b.c.d as a.b.c.d.
IpAddress unmapped(const IpAddress& a) { return is_v4_mapped(a) ? v4_from(a, 12) : a; }

bool is_wildcard(const IpAddress& a) {
    for (auto b : a.bytes)
        if (b != 0) return false;
    return true;
}

// Delivered to this host whatever the interface: loopback and its own addresses.
bool is_local(const IpAddress& a, const std::vector<IpAddress>& local_addresses) {
    if (!a.v6 && a.bytes[0] == 127) return true;
    if (a.v6 && is_all_zero_but_last(a, 1)) return true;
    for (const auto& local : local_addresses)
        if (unmapped(local) == a) return true;
    return false;
}

}  // namespace

bool reaches_listener(const IpAddress& dest, std::uint16_t port, const std::vector<ListenerAddress>& listeners,
                      const std::vector<IpAddress>& local_addresses) {
    const IpAddress to = unmapped(dest);
    for (const auto& listener : listeners) {
        if (listener.port != port) continue;
        // Linux sends 0.0.0.0 and :: to the loopback address of their family;
        // every listener on the port counts, whichever family it has.
        if (classify_address(to) == AddressClass::unspecified) return true;
        const IpAddress bound = unmapped(listener.ip);
        if (bound == to) return true;
        // A wildcard listener takes every local address of its family; an IPv6
        // one takes IPv4 ones too (dual-stack, Linux's default; assumed always).
        if (is_wildcard(bound) && (bound.v6 || !to.v6) && is_local(to, local_addresses)) return true;
    }
    return false;
}

}  // namespace vaultgate
