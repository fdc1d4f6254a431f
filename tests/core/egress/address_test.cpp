#include "vaultgate/egress/address.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vaultgate {
namespace {

IpAddress ip(const std::string& text) {
    auto a = parse_ip_strict(text);
    EXPECT_TRUE(a) << text;
    return a.value_or(IpAddress{});
}

TEST(ParseIpStrict, AcceptsAndPrintsCanonically) {
    struct Case {
        std::string text;
        bool v6;
        std::string canonical;
    };
    const std::vector<Case> cases = {
        {"0.0.0.0", false, "0.0.0.0"},
        {"1.2.3.4", false, "1.2.3.4"},
        {"255.255.255.255", false, "255.255.255.255"},
        {"10.0.0.1", false, "10.0.0.1"},
        {"::", true, "::"},
        {"::1", true, "::1"},
        {"1::", true, "1::"},
        {"0:0:0:0:0:0:0:0", true, "::"},
        {"1:2:3:4:5:6:7:8", true, "1:2:3:4:5:6:7:8"},
        {"FE80::ABCD", true, "fe80::abcd"},
        {"0001:0002::", true, "1:2::"},
        // RFC 5952: a single zero group is not compressed; the longest run is,
        // the first of equal runs wins.
        {"1:2:3:4:5:6:7::", true, "1:2:3:4:5:6:7:0"},
        {"::2:3:4:5:6:7:8", true, "0:2:3:4:5:6:7:8"},
        {"2001:db8:0:0:1:0:0:1", true, "2001:db8::1:0:0:1"},
        {"2001:0:0:1:0:0:0:1", true, "2001:0:0:1::1"},
        {"1:0:0:0:2:0:0:0", true, "1::2:0:0:0"},
        {"1:0:0:2:0:0:0:3", true, "1:0:0:2::3"},
        {"2001:db8::0:1", true, "2001:db8::1"},
        // Embedded dotted quad; only IPv4-mapped is printed in mixed notation.
        {"::ffff:1.2.3.4", true, "::ffff:1.2.3.4"},
        {"::FFFF:0102:0304", true, "::ffff:1.2.3.4"},
        {"::ffff:0:0", true, "::ffff:0.0.0.0"},
        {"::1.2.3.4", true, "::102:304"},
        {"1:2:3:4:5:6:1.2.3.4", true, "1:2:3:4:5:6:102:304"},
        {"64:ff9b::169.254.169.254", true, "64:ff9b::a9fe:a9fe"},
        {"fd00:ec2::254", true, "fd00:ec2::254"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        auto a = parse_ip_strict(c.text);
        ASSERT_TRUE(a);
        EXPECT_EQ(a->v6, c.v6);
        EXPECT_EQ(a->to_string(), c.canonical);
        // The canonical text parses back to the same address.
        EXPECT_EQ(parse_ip_strict(a->to_string()), a);
    }
}

TEST(ParseIpStrict, Refuses) {
    const std::vector<std::string> cases = {
        "",
        "1.2.3",
        "1.2.3.4.5",
        "01.2.3.4",
        "1.2.3.04",
        "00.0.0.0",
        "256.0.0.0",
        "1.2.3.256",
        "1.2.3.4 ",
        " 1.2.3.4",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "127.1",
        "2130706433",
        "0x7f000001",
        "1..2.3",
        "1.2.3.",
        ".1.2.3",
        "+1.2.3.4",
        "1.2.3.-4",
        "1.2.3.4\n",
        "1234.1.1.1",
        ":::",
        ":",
        "::::",
        "1:2:3:4:5:6:7",
        "1:2:3:4:5:6:7:8:9",
        "1::2::3",
        ":1::",
        "1::2:",
        ":1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8:",
        "12345::",
        "g::",
        "::g",
        "::1%eth0",
        "fe80::1%25",
        "::ffff:1.2.3.04",
        "::ffff:1.2.3",
        "::ffff:0x7f.0.0.1",
        "1.2.3.4::",
        "::1.2.3.4:1",
        "1:2:3:4:5:6:7:1.2.3.4",
        "1::2:3:4:5:6:7:8",
        "::1:2:3:4:5:6:7:8",
        "[::1]",
        "1:2:3:4:5:6:7:8::",
        std::string("::1\0", 4),
    };
    for (const auto& text : cases) {
        SCOPED_TRACE(testing::PrintToString(text));
        auto a = parse_ip_strict(text);
        EXPECT_FALSE(a) << a->to_string();
    }
}

TEST(IpAddress, V4FactoryMatchesParser) {
    EXPECT_EQ(IpAddress::v4(169, 254, 169, 254), ip("169.254.169.254"));
    EXPECT_NE(ip("1.2.3.4"), ip("::ffff:1.2.3.4"));
}

struct ClassCase {
    std::string text;
    AddressClass cls;
};

TEST(ClassifyAddress, Ipv4) {
    using C = AddressClass;
    const std::vector<ClassCase> cases = {
        {"1.1.1.1", C::global},
        {"8.8.8.8", C::global},
        {"172.15.255.255", C::global},
        {"172.32.0.1", C::global},
        {"100.63.255.255", C::global},
        {"100.128.0.1", C::global},
        {"169.253.255.255", C::global},
        {"169.255.0.1", C::global},
        {"192.0.3.1", C::global},
        {"198.17.255.255", C::global},
        {"198.20.0.1", C::global},
        {"223.255.255.255", C::global},
        {"127.0.0.1", C::loopback},
        {"127.255.255.255", C::loopback},
        {"0.0.0.0", C::unspecified},
        {"0.1.2.3", C::unspecified},
        {"10.0.0.1", C::private_network},
        {"10.255.255.255", C::private_network},
        {"172.16.0.1", C::private_network},
        {"172.31.255.255", C::private_network},
        {"192.168.0.1", C::private_network},
        {"192.168.255.255", C::private_network},
        {"100.64.0.1", C::cgnat},
        {"100.127.255.255", C::cgnat},
        {"169.254.169.254", C::metadata},
        {"169.254.170.2", C::metadata},
        {"100.100.100.200", C::metadata},
        {"169.254.0.1", C::link_local},
        {"169.254.169.253", C::link_local},
        {"169.254.255.255", C::link_local},
        {"224.0.0.1", C::multicast},
        {"239.255.255.255", C::multicast},
        {"255.255.255.255", C::broadcast},
        {"240.0.0.1", C::reserved},
        {"255.255.255.254", C::reserved},
        {"192.0.2.1", C::documentation},
        {"198.51.100.1", C::documentation},
        {"203.0.113.255", C::documentation},
        {"192.0.0.1", C::reserved},
        {"198.18.0.1", C::reserved},
        {"198.19.255.255", C::reserved},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_EQ(address_class_name(classify_address(ip(c.text))), address_class_name(c.cls));
    }
}

TEST(ClassifyAddress, Ipv6) {
    using C = AddressClass;
    const std::vector<ClassCase> cases = {
        {"2606:4700:4700::1111", C::global},
        {"2001:4860:4860::8888", C::global},
        {"::", C::unspecified},
        {"::1", C::loopback},
        {"fe80::1", C::link_local},
        {"febf:ffff::1", C::link_local},
        {"fc00::1", C::unique_local},
        {"fd00::1", C::unique_local},
        {"fdff:ffff::1", C::unique_local},
        {"fd00:ec2::254", C::metadata},
        {"ff02::1", C::multicast},
        {"ff05::1:3", C::multicast},
        {"2001:db8::1", C::documentation},
        {"3fff::1", C::documentation},
        {"100::1", C::reserved},
        {"2001:2::1", C::reserved},
        {"5f00::1", C::reserved},
        {"4000::1", C::reserved},
        {"fec0::1", C::reserved},
        {"::ffff:0:1.2.3.4", C::reserved},
        // Embedded IPv4: the embedded address decides.
        {"::ffff:169.254.169.254", C::metadata},
        {"::ffff:127.0.0.1", C::loopback},
        {"::ffff:10.0.0.1", C::private_network},
        {"::ffff:0.0.0.0", C::unspecified},
        {"::ffff:8.8.8.8", C::global},
        {"::169.254.169.254", C::metadata},
        {"::127.0.0.1", C::loopback},
        {"::192.168.1.1", C::private_network},
        {"::2", C::unspecified},
        {"::8.8.8.8", C::global},
        {"64:ff9b::a9fe:a9fe", C::metadata},
        {"64:ff9b::7f00:1", C::loopback},
        {"64:ff9b::a00:1", C::private_network},
        {"64:ff9b::808:808", C::global},
        {"64:ff9b:1::a9fe:a9fe", C::metadata},
        {"64:ff9b:1:ffff::c0a8:1", C::private_network},
        {"64:ff9b:1::808:808", C::global},
        {"2002:a9fe:a9fe::", C::metadata},
        {"2002:7f00:1::1", C::loopback},
        {"2002:c0a8:101::1", C::private_network},
        {"2002:6440:1::", C::cgnat},
        {"2002:808:808::1", C::global},
        // Teredo: client = last 32 bits inverted, server = bits 32..64.
        {"2001:0:4136:e378:8000:63bf:f5ff:fffe", C::private_network},  // client 10.0.0.1
        {"2001:0:4136:e378::5601:5601", C::metadata},                  // client 169.254.169.254
        {"2001:0:4136:e378:8000:63bf:3fff:fdd2", C::documentation},    // client 192.0.2.45 (RFC 4380)
        {"2001:0:a9fe:a9fe::f7f7:f7f7", C::metadata},                  // server 169.254.169.254
        {"2001:0:4136:e378::f7f7:f7f7", C::global},                    // 65.54.227.120 / 8.8.8.8
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_EQ(address_class_name(classify_address(ip(c.text))), address_class_name(c.cls));
    }
}

TEST(AddressClassName, SnakeCaseNames) {
    EXPECT_EQ(address_class_name(AddressClass::global), "global");
    EXPECT_EQ(address_class_name(AddressClass::private_network), "private_network");
    EXPECT_EQ(address_class_name(AddressClass::unique_local), "unique_local");
    EXPECT_EQ(address_class_name(AddressClass::link_local), "link_local");
    EXPECT_EQ(address_class_name(AddressClass::metadata), "metadata");
}

TEST(ParseCidr, ParsesAndMasksHostBits) {
    struct Case {
        std::string text;
        std::string base;
        int prefix_len;
    };
    const std::vector<Case> cases = {
        {"10.0.0.0/8", "10.0.0.0", 8},
        {"10.1.2.3/8", "10.0.0.0", 8},
        {"172.16.0.0/12", "172.16.0.0", 12},
        {"172.31.255.255/12", "172.16.0.0", 12},
        {"192.168.1.1", "192.168.1.1", 32},
        {"192.168.1.1/32", "192.168.1.1", 32},
        {"0.0.0.0/0", "0.0.0.0", 0},
        {"255.255.255.255/1", "128.0.0.0", 1},
        {"fd00::/8", "fd00::", 8},
        {"fd12:3456::1/8", "fd00::", 8},
        {"2001:db8::1", "2001:db8::1", 128},
        {"2001:db8:ffff::/33", "2001:db8:8000::", 33},
        {"::/0", "::", 0},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        auto cidr = parse_cidr(c.text);
        ASSERT_TRUE(cidr);
        EXPECT_EQ(cidr->base.to_string(), c.base);
        EXPECT_EQ(cidr->prefix_len, c.prefix_len);
    }
}

TEST(ParseCidr, Refuses) {
    const std::vector<std::string> cases = {
        "",
        "/8",
        "10.0.0.0/",
        "10.0.0.0/33",
        "::/129",
        "10.0.0.0/08",
        "10.0.0.0/-1",
        "10.0.0.0/+8",
        "10.0.0.0/8/8",
        "10.0.0.0/8 ",
        "10.0.0.0 /8",
        "10/8",
        "172.16/12",
        "010.0.0.0/8",
        "0x0a.0.0.0/8",
        "fe80::1%eth0/64",
        "[::1]/128",
        "10.0.0.0/1000",
        "example.com/32",
    };
    for (const auto& text : cases) {
        SCOPED_TRACE(text);
        EXPECT_FALSE(parse_cidr(text));
    }
}

TEST(Cidr, Contains) {
    struct Case {
        std::string cidr;
        std::string addr;
        bool inside;
    };
    const std::vector<Case> cases = {
        {"10.0.0.0/8", "10.1.2.3", true},
        {"10.0.0.0/8", "10.255.255.255", true},
        {"10.0.0.0/8", "11.0.0.0", false},
        {"10.0.0.0/8", "9.255.255.255", false},
        // An IPv4 range also covers its IPv4-mapped spelling, and only that one.
        {"10.0.0.0/8", "::ffff:10.1.2.3", true},
        {"10.0.0.0/8", "::ffff:11.1.2.3", false},
        {"10.0.0.0/8", "::10.1.2.3", false},
        {"10.0.0.0/8", "64:ff9b::a01:203", false},
        {"172.16.0.0/12", "172.31.255.255", true},
        {"172.16.0.0/12", "172.32.0.0", false},
        {"192.168.1.7", "192.168.1.7", true},
        {"192.168.1.7", "192.168.1.8", false},
        {"0.0.0.0/0", "8.8.8.8", true},
        {"0.0.0.0/0", "::ffff:8.8.8.8", true},
        {"0.0.0.0/0", "2001:db8::1", false},
        {"fd00::/8", "fd12::1", true},
        {"fd00::/8", "fc00::1", false},
        {"fd00::/8", "10.0.0.1", false},
        {"::/0", "2001::1", true},
        {"::/0", "1.2.3.4", false},
        {"2001:db8::/33", "2001:db8:7fff::1", true},
        {"2001:db8::/33", "2001:db8:8000::1", false},
        {"::1", "::1", true},
        {"::1", "::2", false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.cidr + " " + c.addr);
        auto cidr = parse_cidr(c.cidr);
        ASSERT_TRUE(cidr);
        EXPECT_EQ(cidr->contains(ip(c.addr)), c.inside);
    }
}

TEST(Cidr, ImpossiblePrefixMatchesNothing) {
    Cidr too_long{IpAddress::v4(10, 0, 0, 0), 33};
    Cidr negative{IpAddress::v4(10, 0, 0, 0), -1};
    EXPECT_FALSE(too_long.contains(ip("10.0.0.0")));
    EXPECT_FALSE(negative.contains(ip("10.0.0.0")));
}

// What reaches one of vaultgate's own listeners, as Linux delivers it (the
// connect() outcomes were checked on a host): a specific listener only by its
// own address or an unspecified one, a wildcard one by every local address.
TEST(ReachesListener, ByListenerAndDestination) {
    const std::vector<IpAddress> interfaces = {ip("192.0.2.2"), ip("fd00::2"), ip("fe80::fc:ff:fe00:1")};
    struct Case {
        std::string listener;
        std::string dest;
        std::uint16_t port;
        bool reaches;
    };
    const std::vector<Case> cases = {
        // A listener on 127.0.0.1.
        {"127.0.0.1", "127.0.0.1", 3128, true},
        {"127.0.0.1", "::ffff:127.0.0.1", 3128, true},
        {"127.0.0.1", "0.0.0.0", 3128, true},  // connect() sends 0.0.0.0 to 127.0.0.1
        {"127.0.0.1", "::ffff:0.0.0.0", 3128, true},
        {"127.0.0.1", "::", 3128, true},          // ::1 in fact; refused all the same
        {"127.0.0.1", "127.0.0.2", 3128, false},  // other 127/8 addresses miss it
        {"127.0.0.1", "::1", 3128, false},
        {"127.0.0.1", "192.0.2.2", 3128, false},
        {"127.0.0.1", "127.0.0.1", 3129, false},
        {"127.0.0.1", "0.0.0.0", 3129, false},
        {"127.0.0.1", "::127.0.0.1", 3128, false},  // IPv4-compatible: not delivered locally
        // A listener on an interface address.
        {"192.0.2.2", "192.0.2.2", 3128, true},
        {"192.0.2.2", "0.0.0.0", 3128, true},
        {"192.0.2.2", "127.0.0.1", 3128, false},
        // The IPv4 wildcard: all of 127/8 and every IPv4 interface address.
        {"0.0.0.0", "127.0.0.1", 3128, true},
        {"0.0.0.0", "127.0.0.2", 3128, true},
        {"0.0.0.0", "127.255.255.254", 3128, true},
        {"0.0.0.0", "::ffff:127.0.0.2", 3128, true},
        {"0.0.0.0", "0.0.0.0", 3128, true},
        {"0.0.0.0", "::", 3128, true},
        {"0.0.0.0", "192.0.2.2", 3128, true},
        {"0.0.0.0", "::ffff:192.0.2.2", 3128, true},
        {"0.0.0.0", "192.0.2.3", 3128, false},
        {"0.0.0.0", "8.8.8.8", 3128, false},
        {"0.0.0.0", "::1", 3128, false},  // an IPv4 socket is not reached over IPv6
        {"0.0.0.0", "fd00::2", 3128, false},
        {"0.0.0.0", "192.0.2.2", 3129, false},
        // The IPv6 wildcard (dual-stack): local addresses of both families.
        {"::", "::1", 3128, true},
        {"::", "fd00::2", 3128, true},
        {"::", "fe80::fc:ff:fe00:1", 3128, true},
        {"::", "127.0.0.9", 3128, true},
        {"::", "192.0.2.2", 3128, true},
        {"::", "fd00::3", 3128, false},
        {"::", "2001:4860:4860::8888", 3128, false},
        // A listener on ::1.
        {"::1", "::1", 3128, true},
        {"::1", "::", 3128, true},
        {"::1", "127.0.0.1", 3128, false},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.listener + " <- " + c.dest + ":" + std::to_string(c.port));
        const std::vector<ListenerAddress> listeners = {{ip(c.listener), 3128}};
        EXPECT_EQ(reaches_listener(ip(c.dest), c.port, listeners, interfaces), c.reaches);
    }
}

TEST(ReachesListener, EveryListenerIsLookedAt) {
    const std::vector<ListenerAddress> listeners = {{ip("127.0.0.1"), 3128}, {ip("0.0.0.0"), 3129}, {ip("::1"), 8080}};
    EXPECT_TRUE(reaches_listener(ip("127.0.0.5"), 3129, listeners, {}));
    EXPECT_FALSE(reaches_listener(ip("127.0.0.5"), 3128, listeners, {}));
    EXPECT_TRUE(reaches_listener(ip("0.0.0.0"), 8080, listeners, {}));
    EXPECT_FALSE(reaches_listener(ip("0.0.0.0"), 9090, listeners, {}));
    EXPECT_FALSE(reaches_listener(ip("127.0.0.1"), 3128, {}, {}));
}

}  // namespace
}  // namespace vaultgate
