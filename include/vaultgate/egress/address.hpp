#pragma once
// IP address classification for the egress policy. Pure functions with no I/O
// and no Asio, so they can be tested by table and fuzzed.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

struct IpAddress {
    bool v6 = false;
    std::array<std::uint8_t, 16> bytes{};  // IPv4 uses bytes[0..3]

    static IpAddress v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d);
    bool operator==(const IpAddress&) const = default;
    std::string to_string() const;
};

// Strict textual forms only: dotted-quad with four decimal octets without leading
// zeros; RFC 4291 IPv6 text (with optional embedded dotted-quad) without a zone id.
std::optional<IpAddress> parse_ip_strict(std::string_view text);

enum class AddressClass {
    global,           // ordinary public unicast
    loopback,         // 127/8, ::1
    unspecified,      // 0.0.0.0/8, ::
    link_local,       // 169.254/16 (except metadata), fe80::/10
    metadata,         // 169.254.169.254, fd00:ec2::254, 100.100.100.200 (Alibaba)
    private_network,  // 10/8, 172.16/12, 192.168/16
    cgnat,            // 100.64/10
    unique_local,     // fc00::/7
    multicast,        // 224/4, ff00::/8
    broadcast,        // 255.255.255.255
    documentation,    // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32
    reserved,         // 240/4, 192.0.0/24, 198.18/15 (benchmarking), other special-purpose
};

std::string_view address_class_name(AddressClass c);

// Classifies; IPv6 forms that embed an IPv4 address (mapped ::ffff:0:0/96,
// compatible ::/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16,
// Teredo 2001::/32) are classified by the embedded address.
AddressClass classify_address(const IpAddress& addr);

struct Cidr {
    IpAddress base;
    int prefix_len = 0;
    bool contains(const IpAddress& addr) const;  // an IPv4 CIDR also matches ::ffff:a.b.c.d
};

// "10.0.0.0/8", "fd00::/8", or a single address (full-length prefix).
std::optional<Cidr> parse_cidr(std::string_view text);

// One of vaultgate's listening sockets as bound; the address may be a wildcard.
struct ListenerAddress {
    IpAddress ip;
    std::uint16_t port = 0;
};

// Whether a TCP connection opened on this host to dest:port lands on one of
// `listeners`, as Linux delivers it. `local_addresses` are the host's interface
// addresses, each of which reaches a listener bound to a wildcard address.
bool reaches_listener(const IpAddress& dest, std::uint16_t port, const std::vector<ListenerAddress>& listeners,
                      const std::vector<IpAddress>& local_addresses);

}  // namespace vaultgate
