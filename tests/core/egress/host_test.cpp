#include "vaultgate/egress/host.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

// Failures print the error's text rather than its bytes.
static void PrintTo(HostError e, std::ostream* os) { *os << host_error_text(e); }

namespace {

struct NormalizeOk {
    std::string raw;
    std::string host;
    HostKind kind;
};

TEST(NormalizeHost, AcceptsAndCanonicalises) {
    const std::vector<NormalizeOk> cases = {
        // Case and the one trailing dot of a fully-qualified name.
        {"example.com", "example.com", HostKind::name},
        {"Example.COM", "example.com", HostKind::name},
        {"example.com.", "example.com", HostKind::name},
        {"EXAMPLE.com.", "example.com", HostKind::name},
        {"localhost", "localhost", HostKind::name},
        {"a-b.example", "a-b.example", HostKind::name},
        {"_dmarc.example.com", "_dmarc.example.com", HostKind::name},
        {"s3.eu-west-1.amazonaws.com", "s3.eu-west-1.amazonaws.com", HostKind::name},
        // A name, even though it is the metadata server's: the policy decides.
        {"metadata.google.internal", "metadata.google.internal", HostKind::name},
        {"1.2.3.4x", "1.2.3.4x", HostKind::name},
        // IDN to punycode, including the ideographic full stop as trailing dot.
        {"bücher.example", "xn--bcher-kva.example", HostKind::name},
        {"BÜCHER.example.", "xn--bcher-kva.example", HostKind::name},
        {"bücher.example\xe3\x80\x82", "xn--bcher-kva.example", HostKind::name},
        {"xn--bcher-kva.example", "xn--bcher-kva.example", HostKind::name},
        {"faß.de", "xn--fa-hia.de", HostKind::name},
        {"b_ücher.example", "xn--b_cher-4ya.example", HostKind::name},
        // Only IDNA2003 (transitional) mapping accepts symbols: the fallback.
        {"\xf0\x9f\x92\xa9.la", "xn--ls8h.la", HostKind::name},
        // Strict dotted quads.
        {"127.0.0.1", "127.0.0.1", HostKind::ipv4},
        {"0.0.0.0", "0.0.0.0", HostKind::ipv4},
        {"169.254.169.254", "169.254.169.254", HostKind::ipv4},
        {"255.255.255.255", "255.255.255.255", HostKind::ipv4},
        {"100.64.0.1", "100.64.0.1", HostKind::ipv4},
        {"1.2.3.4.", "1.2.3.4", HostKind::ipv4},
        // Fullwidth digits map to ASCII and then count as the address they spell.
        {"\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.\xef\xbc\x90.\xef\xbc\x90.\xef\xbc\x91", "127.0.0.1", HostKind::ipv4},
        // IPv6, bracketed or not, always printed in RFC 5952 form without brackets.
        {"[::1]", "::1", HostKind::ipv6},
        {"::1", "::1", HostKind::ipv6},
        {"[::]", "::", HostKind::ipv6},
        {"[0:0:0:0:0:0:0:1]", "::1", HostKind::ipv6},
        {"[::FFFF:169.254.169.254]", "::ffff:169.254.169.254", HostKind::ipv6},
        {"[::ffff:a9fe:a9fe]", "::ffff:169.254.169.254", HostKind::ipv6},
        {"[::169.254.169.254]", "::a9fe:a9fe", HostKind::ipv6},
        {"[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe", HostKind::ipv6},
        {"[64:ff9b::169.254.169.254]", "64:ff9b::a9fe:a9fe", HostKind::ipv6},
        {"[2002:a9fe:a9fe::]", "2002:a9fe:a9fe::", HostKind::ipv6},
        {"[2001:DB8:0:0:0:0:0:1]", "2001:db8::1", HostKind::ipv6},
        {"[2001:0db8:0000:0000:0001:0000:0000:0001]", "2001:db8::1:0:0:1", HostKind::ipv6},
        {"[fd00::1]", "fd00::1", HostKind::ipv6},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.raw);
        HostResult r = normalize_host(c.raw);
        ASSERT_TRUE(r) << host_error_text(r.error);
        EXPECT_EQ(*r.host, c.host);
        EXPECT_EQ(r.kind, c.kind);
    }
}

TEST(NormalizeHost, IsIdempotent) {
    const std::vector<std::string> inputs = {"Example.COM.", "bücher.example",  "[::FFFF:1.2.3.4]",
                                             "127.0.0.1",    "[2001:DB8::0:1]", "_x.Example"};
    for (const auto& raw : inputs) {
        SCOPED_TRACE(raw);
        HostResult once = normalize_host(raw);
        ASSERT_TRUE(once);
        std::string again_input = once.kind == HostKind::ipv6 ? "[" + *once.host + "]" : *once.host;
        HostResult twice = normalize_host(again_input);
        ASSERT_TRUE(twice);
        EXPECT_EQ(*twice.host, *once.host);
        EXPECT_EQ(twice.kind, once.kind);
    }
}

struct NormalizeBad {
    std::string raw;
    HostError error;
};

std::string repeat(char c, std::size_t n) { return std::string(n, c); }

// 63-byte labels joined by dots up to exactly `total` bytes.
std::string name_of_length(std::size_t total) {
    std::string out;
    while (out.size() < total) {
        if (!out.empty()) out += '.';
        out += repeat('a', std::min<std::size_t>(63, total - out.size()));
    }
    return out;
}

TEST(NormalizeHost, LengthLimits) {
    EXPECT_TRUE(normalize_host(repeat('a', 63) + ".com"));
    EXPECT_EQ(normalize_host(repeat('a', 64) + ".com").error, HostError::label_too_long);
    ASSERT_EQ(name_of_length(253).size(), 253u);
    EXPECT_TRUE(normalize_host(name_of_length(253)));
    EXPECT_TRUE(normalize_host(name_of_length(253) + "."));
    EXPECT_EQ(normalize_host(name_of_length(254)).error, HostError::name_too_long);
    EXPECT_EQ(normalize_host(repeat('a', 5000)).error, HostError::name_too_long);
    // Punycode length counts, not the UTF-8 length.
    EXPECT_EQ(normalize_host("ü." + repeat('a', 64) + ".com").error, HostError::label_too_long);
    // Ignorable code points (soft hyphens) must not shrink a huge input into a name.
    std::string soft_hyphens;
    for (int i = 0; i < 2000; ++i) soft_hyphens += "\xc2\xad";
    EXPECT_EQ(normalize_host("a" + soft_hyphens + ".com").error, HostError::name_too_long);
}

TEST(NormalizeHost, Refuses) {
    using E = HostError;
    const std::vector<NormalizeBad> cases = {
        {"", E::empty},
        {".", E::empty},
        {"example.com..", E::bad_character},
        {"a..b", E::bad_character},
        {".example.com", E::bad_character},
        {"exa mple.com", E::bad_character},
        {"exa/mple.com", E::bad_character},
        {"user@example.com", E::bad_character},
        {"exa%41mple.com", E::bad_character},
        {"example.com\r\nX-Evil: 1", E::bad_character},
        {std::string("exa\0mple.com", 12), E::bad_character},
        {std::string("b\xc3\xbc\0.com", 7), E::bad_character},
        {"example.com ", E::bad_character},
        {"*.example.com", E::bad_character},
        {"ex\xff.com", E::bad_idn},
        {"-\xc3\xbc.com", E::bad_idn},
        {"xn--bcher-kva.\xc3\xbc/x", E::bad_idn},
        // IPv4 written any way but the strict dotted quad: the SSRF literature.
        {"127.1", E::ip_literal_form},
        {"127.0.1", E::ip_literal_form},
        {"0177.0.0.1", E::ip_literal_form},
        {"0x7f.0.0.1", E::ip_literal_form},
        {"0X7F.0.0.1", E::ip_literal_form},
        {"0x7f.1", E::ip_literal_form},
        {"2130706433", E::ip_literal_form},
        {"0x7f000001", E::ip_literal_form},
        {"017700000001", E::ip_literal_form},
        {"2852039166", E::ip_literal_form},
        {"0xa9fea9fe", E::ip_literal_form},
        {"0xA9FEA9FE", E::ip_literal_form},
        {"0xa9.0xfe.0xa9.0xfe", E::ip_literal_form},
        {"0251.0376.0251.0376", E::ip_literal_form},
        {"169.16689662", E::ip_literal_form},
        {"169.254.43518", E::ip_literal_form},
        {"1.2.3.4.5", E::ip_literal_form},
        {"256.1.1.1", E::ip_literal_form},
        {"1.2.3.256", E::ip_literal_form},
        {"01.2.3.4", E::ip_literal_form},
        {"1.2.3.04", E::ip_literal_form},
        {"00.0.0.0", E::ip_literal_form},
        {"0", E::ip_literal_form},
        {"0x", E::ip_literal_form},
        {"example.123", E::ip_literal_form},
        {"example.0x1", E::ip_literal_form},
        {"127.0.0.1..", E::bad_character},
        // IPv6: strict text, never a zone.
        {"fe80::1%eth0", E::ipv6_zone},
        {"[fe80::1%eth0]", E::ipv6_zone},
        {"[fe80::1%25eth0]", E::ipv6_zone},
        {"[::1", E::bad_ipv6},
        {"::1]", E::bad_character},
        {"[", E::bad_ipv6},
        {"[]", E::bad_ipv6},
        {"[127.0.0.1]", E::bad_ipv6},
        {"[example.com]", E::bad_ipv6},
        {"[1:2:3:4:5:6:7:8:9]", E::bad_ipv6},
        {"[1::2::3]", E::bad_ipv6},
        {"[:1::]", E::bad_ipv6},
        {"[12345::]", E::bad_ipv6},
        {"[g::]", E::bad_ipv6},
        {"[::ffff:0177.0.0.1]", E::bad_ipv6},
        {"[::ffff:127.1]", E::bad_ipv6},
        {"[::1]x", E::bad_ipv6},
        {"[[::1]]", E::bad_ipv6},
        {"example.com:443", E::bad_character},
        {"fe80::1%", E::ipv6_zone},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(testing::PrintToString(c.raw));
        HostResult r = normalize_host(c.raw);
        EXPECT_FALSE(r) << *r.host;
        EXPECT_EQ(r.error, c.error) << host_error_text(r.error);
    }
}

TEST(HostErrorText, EveryValueHasText) {
    for (auto e : {HostError::empty, HostError::bad_character, HostError::label_too_long, HostError::name_too_long,
                   HostError::bad_idn, HostError::ip_literal_form, HostError::bad_ipv6, HostError::ipv6_zone,
                   HostError::bad_port, HostError::missing_port}) {
        EXPECT_FALSE(host_error_text(e).empty());
    }
    EXPECT_NE(host_error_text(HostError::ip_literal_form).find("dotted-quad"), std::string_view::npos);
}

struct AuthorityOk {
    std::string raw;
    std::uint16_t default_port;
    Authority expected;
};

TEST(ParseAuthority, Accepts) {
    const std::vector<AuthorityOk> cases = {
        {"example.com:443", 0, {"example.com", 443, HostKind::name}},
        {"Example.COM.:8443", 0, {"example.com", 8443, HostKind::name}},
        {"example.com", 443, {"example.com", 443, HostKind::name}},
        {"example.com", 80, {"example.com", 80, HostKind::name}},
        {"example.com:1", 0, {"example.com", 1, HostKind::name}},
        {"example.com:65535", 0, {"example.com", 65535, HostKind::name}},
        {"example.com:80", 443, {"example.com", 80, HostKind::name}},
        {"bücher.example:443", 0, {"xn--bcher-kva.example", 443, HostKind::name}},
        {"127.0.0.1:80", 0, {"127.0.0.1", 80, HostKind::ipv4}},
        {"[::1]:443", 0, {"::1", 443, HostKind::ipv6}},
        {"[::1]", 443, {"::1", 443, HostKind::ipv6}},
        {"[::FFFF:169.254.169.254]:80", 0, {"::ffff:169.254.169.254", 80, HostKind::ipv6}},
        {"[2001:db8:0::1]:8080", 0, {"2001:db8::1", 8080, HostKind::ipv6}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.raw);
        AuthorityResult r = parse_authority(c.raw, c.default_port);
        ASSERT_TRUE(r) << host_error_text(r.error);
        EXPECT_EQ(*r.authority, c.expected);
    }
}

struct AuthorityBad {
    std::string raw;
    std::uint16_t default_port;
    HostError error;
};

TEST(ParseAuthority, Refuses) {
    using E = HostError;
    const std::vector<AuthorityBad> cases = {
        {"", 443, E::empty},
        {":443", 0, E::empty},
        {"example.com", 0, E::missing_port},
        {"[::1]", 0, E::missing_port},
        {"example.com:", 0, E::bad_port},
        {"example.com:", 443, E::bad_port},
        {"example.com:0", 0, E::bad_port},
        {"example.com:00", 0, E::bad_port},
        {"example.com:080", 0, E::bad_port},
        {"example.com:0443", 0, E::bad_port},
        {"example.com:65536", 0, E::bad_port},
        {"example.com:99999", 0, E::bad_port},
        {"example.com:123456", 0, E::bad_port},
        {"example.com:+80", 0, E::bad_port},
        {"example.com:-1", 0, E::bad_port},
        {"example.com:8a", 0, E::bad_port},
        {"example.com: 80", 0, E::bad_port},
        {"example.com:80 ", 0, E::bad_port},
        {"[::1]:", 0, E::bad_port},
        {"[::1]:0", 0, E::bad_port},
        {"[::1]:65536", 0, E::bad_port},
        {"[::1]x", 0, E::bad_ipv6},
        {"[::1]443", 0, E::bad_ipv6},
        {"[::1", 443, E::bad_ipv6},
        // An unbracketed IPv6 cannot carry a port, and is not guessed at.
        {"::1:443", 0, E::bad_ipv6},
        {"::1", 443, E::bad_ipv6},
        {"2001:db8::1:443", 0, E::bad_ipv6},
        {"example.com:443:443", 0, E::bad_port},
        {"fe80::1%eth0", 443, E::ipv6_zone},
        {"[fe80::1%25eth0]:443", 0, E::ipv6_zone},
        {"user@example.com:443", 0, E::bad_character},
        {"user:pass@example.com", 443, E::bad_port},
        {"127.1:443", 0, E::ip_literal_form},
        {"0xa9fea9fe:80", 0, E::ip_literal_form},
        {"2852039166", 80, E::ip_literal_form},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.raw);
        AuthorityResult r = parse_authority(c.raw, c.default_port);
        EXPECT_FALSE(r);
        EXPECT_EQ(r.error, c.error) << host_error_text(r.error);
    }
}

TEST(FormatAuthority, BracketsIpv6AndRoundTrips) {
    struct Case {
        Authority a;
        std::string with_port;
        std::string without_port;
    };
    const std::vector<Case> cases = {
        {{"example.com", 443, HostKind::name}, "example.com:443", "example.com"},
        {{"example.com", 0, HostKind::name}, "example.com", "example.com"},
        {{"127.0.0.1", 80, HostKind::ipv4}, "127.0.0.1:80", "127.0.0.1"},
        {{"::1", 443, HostKind::ipv6}, "[::1]:443", "[::1]"},
        {{"2001:db8::1", 8443, HostKind::ipv6}, "[2001:db8::1]:8443", "[2001:db8::1]"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.with_port);
        EXPECT_EQ(format_authority(c.a), c.with_port);
        EXPECT_EQ(format_authority(c.a, false), c.without_port);
        if (c.a.port != 0) {
            AuthorityResult back = parse_authority(format_authority(c.a), 0);
            ASSERT_TRUE(back);
            EXPECT_EQ(*back.authority, c.a);
        }
    }
}

}  // namespace
}  // namespace vaultgate
