#include "vaultgate/egress/policy.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace vaultgate {
namespace {

DomainRule rule(const std::string& text) {
    std::string error;
    auto r = DomainRule::parse(text, &error);
    EXPECT_TRUE(r) << text << ": " << error;
    return r.value_or(DomainRule{});
}

Authority dest(const std::string& authority) {
    auto r = parse_authority(authority, 0);
    EXPECT_TRUE(r) << authority << ": " << host_error_text(r.error);
    return r.authority.value_or(Authority{});
}

Cidr cidr(const std::string& text) {
    auto c = parse_cidr(text);
    EXPECT_TRUE(c) << text;
    return c.value_or(Cidr{});
}

IpAddress parsed_ip(const std::string& text) {
    auto a = parse_ip_strict(text);
    EXPECT_TRUE(a) << text;
    return a.value_or(IpAddress{});
}

TEST(DomainRuleParse, Accepts) {
    struct Case {
        std::string text;
        std::string host;
        bool wildcard;
        std::optional<std::uint16_t> port;
    };
    const std::vector<Case> cases = {
        {"api.example.com", "api.example.com", false, std::nullopt},
        {"API.Example.COM.", "api.example.com", false, std::nullopt},
        {"*.example.com", "example.com", true, std::nullopt},
        {"api.example.com:8443", "api.example.com", false, 8443},
        {"*.example.com:443", "example.com", true, 443},
        {"*.Example.COM.:443", "example.com", true, 443},
        {"bücher.example", "xn--bcher-kva.example", false, std::nullopt},
        {"*.bücher.example", "xn--bcher-kva.example", true, std::nullopt},
        {"localhost", "localhost", false, std::nullopt},
        {"metadata.google.internal", "metadata.google.internal", false, std::nullopt},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        std::string error;
        auto r = DomainRule::parse(c.text, &error);
        ASSERT_TRUE(r) << error;
        EXPECT_EQ(r->host, c.host);
        EXPECT_EQ(r->wildcard, c.wildcard);
        EXPECT_EQ(r->port, c.port);
    }
}

TEST(DomainRuleParse, RefusesWithAMessage) {
    const std::vector<std::string> cases = {
        "",
        "*",
        "*.",
        "**.example.com",
        "*example.com",
        "api.*.com",
        "example.*",
        "*.*.example.com",
        "example.com:0",
        "example.com:",
        "example.com:65536",
        "example.com:080",
        "example.com:https",
        "1.2.3.4",
        "1.2.3.4:443",
        "127.1",
        "2130706433",
        "*.1.2.3.4",
        "[::1]",
        "::1",
        "[::1]:443",
        "exa mple.com",
        "a..b",
        "example.com:443:443",
        "user@example.com",
        "*..example.com",
        ".example.com",
    };
    for (const auto& text : cases) {
        SCOPED_TRACE(text);
        std::string error;
        EXPECT_FALSE(DomainRule::parse(text, &error));
        EXPECT_FALSE(error.empty());
        // A null error pointer is allowed.
        EXPECT_FALSE(DomainRule::parse(text, nullptr));
    }
}

TEST(DomainRuleParse, IpAddressesPointToAllowedCidrs) {
    std::string error;
    EXPECT_FALSE(DomainRule::parse("10.0.0.1", &error));
    EXPECT_NE(error.find("allowed_cidrs"), std::string::npos) << error;
}

TEST(DomainRuleMatch, ExactAndWildcard) {
    struct Case {
        std::string rule;
        std::vector<std::string> match;
        std::vector<std::string> no_match;
    };
    const std::vector<Case> cases = {
        {"api.example.com",
         {"api.example.com"},
         {"example.com", "xapi.example.com", "evil.api.example.com", "api.example.com.evil.com", "api.example.co",
          "api-example.com", "api.example.comx", "apiexample.com", ""}},
        {"*.example.com",
         {"api.example.com", "a.b.example.com", "x.example.com", "_x.example.com"},
         {"example.com", "evilexample.com", "api.example.com.evil.com", "example.com.evil.com", "xexample.com", "com",
          "api.example.co", ".example.com", "example.comx", ""}},
        {"*.com", {"example.com"}, {"com", "example.net", "excom"}},
    };
    for (const auto& c : cases) {
        DomainRule r = rule(c.rule);
        for (const auto& h : c.match) {
            SCOPED_TRACE(c.rule + " ~ " + h);
            EXPECT_TRUE(r.matches_host(h));
        }
        for (const auto& h : c.no_match) {
            SCOPED_TRACE(c.rule + " !~ " + h);
            EXPECT_FALSE(r.matches_host(h));
        }
    }
}

EgressPolicy sample_policy() {
    EgressPolicy p;
    p.name = "sample";
    p.allowed_domains = {rule("api.example.com"), rule("*.cdn.example.net"), rule("custom.example.org:8443"),
                         rule("*.wild.example:9000")};
    p.allowed_cidrs = {cidr("8.8.8.0/24"), cidr("2001:4860::/32")};
    return p;
}

struct DestinationCase {
    std::string authority;
    EgressKind kind;
    DenyReason expected;
};

void expect_destinations(const EgressPolicy& p, const std::vector<DestinationCase>& cases) {
    for (const auto& c : cases) {
        SCOPED_TRACE(c.authority + (c.kind == EgressKind::connect ? " CONNECT" : " http"));
        EXPECT_EQ(deny_reason_name(check_destination(p, dest(c.authority), c.kind)), deny_reason_name(c.expected));
    }
}

TEST(CheckDestination, HttpsOnlyPolicy) {
    using D = DenyReason;
    constexpr auto connect = EgressKind::connect;
    constexpr auto http = EgressKind::plain_http;
    expect_destinations(sample_policy(), {
                                             {"api.example.com:443", connect, D::none},
                                             {"API.EXAMPLE.COM.:443", connect, D::none},
                                             {"api.example.com:80", connect, D::port_not_allowed},
                                             {"api.example.com:8443", connect, D::port_not_allowed},
                                             {"api.example.com:80", http, D::http_not_allowed},
                                             {"example.com:443", connect, D::domain_not_allowed},
                                             {"evil.api.example.com:443", connect, D::domain_not_allowed},
                                             {"api.example.com.evil.com:443", connect, D::domain_not_allowed},
                                             {"x.cdn.example.net:443", connect, D::none},
                                             {"a.b.cdn.example.net:443", connect, D::none},
                                             {"cdn.example.net:443", connect, D::domain_not_allowed},
                                             {"evilcdn.example.net:443", connect, D::domain_not_allowed},
                                             {"custom.example.org:8443", connect, D::none},
                                             {"custom.example.org:443", connect, D::port_not_allowed},
                                             {"x.wild.example:9000", connect, D::none},
                                             {"x.wild.example:443", connect, D::port_not_allowed},
                                             {"wild.example:9000", connect, D::domain_not_allowed},
                                             {"metadata.google.internal:80", connect, D::domain_not_allowed},
                                             {"metadata.google.internal:443", connect, D::domain_not_allowed},
                                             {"localhost:443", connect, D::domain_not_allowed},
                                             {"pypi.org:443", connect, D::domain_not_allowed},
                                             // IP literals are allowed only through allowed_cidrs.
                                             {"8.8.8.8:443", connect, D::none},
                                             {"8.8.8.8:8443", connect, D::none},
                                             {"[::ffff:8.8.8.8]:443", connect, D::none},
                                             {"[2001:4860:4860::8888]:443", connect, D::none},
                                             {"1.1.1.1:443", connect, D::ip_literal_not_allowed},
                                             {"169.254.169.254:80", connect, D::ip_literal_not_allowed},
                                             {"127.0.0.1:443", connect, D::ip_literal_not_allowed},
                                             {"0.0.0.0:443", connect, D::ip_literal_not_allowed},
                                             {"[::]:443", connect, D::ip_literal_not_allowed},
                                             {"[::1]:443", connect, D::ip_literal_not_allowed},
                                             {"[::ffff:169.254.169.254]:443", connect, D::ip_literal_not_allowed},
                                             {"[::169.254.169.254]:443", connect, D::ip_literal_not_allowed},
                                             {"[64:ff9b::a9fe:a9fe]:443", connect, D::ip_literal_not_allowed},
                                             {"[2002:a9fe:a9fe::]:443", connect, D::ip_literal_not_allowed},
                                         });
}

HelloResult hello_naming(const std::string& name) { return HelloResult{HelloStatus::ok, name}; }

TEST(CheckTunnelSni, TheHelloMustNameTheConnectHost) {
    using D = DenyReason;
    const auto policy = sample_policy();
    EXPECT_EQ(check_tunnel_sni(policy, dest("api.example.com:443"), hello_naming("api.example.com")), D::none);
    EXPECT_EQ(check_tunnel_sni(policy, dest("api.example.com:443"), hello_naming("API.Example.COM.")), D::none);
    // Another name, even one the policy allows: the CONNECT chose the address.
    EXPECT_EQ(check_tunnel_sni(policy, dest("api.example.com:443"), hello_naming("x.cdn.example.net")),
              D::sni_mismatch);
    EXPECT_EQ(check_tunnel_sni(policy, dest("api.example.com:443"), hello_naming("forbidden.test")), D::sni_mismatch);
    EXPECT_EQ(check_tunnel_sni(policy, dest("api.example.com:443"), hello_naming("8.8.8.8")), D::sni_mismatch);
    EXPECT_EQ(check_tunnel_sni(policy, dest("api.example.com:443"), hello_naming("bad name")), D::sni_mismatch);
}

TEST(CheckTunnelSni, ThroughAnIpLiteralTheNameMustBeAllowedThere) {
    using D = DenyReason;
    const auto policy = sample_policy();
    EXPECT_EQ(check_tunnel_sni(policy, dest("8.8.8.8:443"), hello_naming("api.example.com")), D::none);
    EXPECT_EQ(check_tunnel_sni(policy, dest("8.8.8.8:8443"), hello_naming("api.example.com")), D::sni_mismatch);
    EXPECT_EQ(check_tunnel_sni(policy, dest("8.8.8.8:443"), hello_naming("forbidden.test")), D::sni_mismatch);
    EXPECT_EQ(check_tunnel_sni(policy, dest("8.8.8.8:443"), hello_naming("8.8.8.8")), D::none);
    EXPECT_EQ(check_tunnel_sni(policy, dest("8.8.8.8:443"), hello_naming("8.8.4.4")), D::sni_mismatch);
}

TEST(CheckTunnelSni, NoHelloOrNoNamePassesAnUnreadableHelloDoesNot) {
    using D = DenyReason;
    const auto policy = sample_policy();
    const auto to = dest("api.example.com:443");
    EXPECT_EQ(check_tunnel_sni(policy, to, HelloResult{HelloStatus::not_tls, {}}), D::none);
    EXPECT_EQ(check_tunnel_sni(policy, to, HelloResult{HelloStatus::no_sni, {}}), D::none);
    EXPECT_EQ(check_tunnel_sni(policy, to, HelloResult{HelloStatus::malformed, {}}), D::sni_mismatch);
    EXPECT_EQ(check_tunnel_sni(policy, to, HelloResult{HelloStatus::incomplete, {}}), D::sni_mismatch);
    EXPECT_EQ(deny_reason_name(D::sni_mismatch), "sni_mismatch");
    EXPECT_NE(deny_reason_advice(D::sni_mismatch, to).find("tunnel_sni_check"), std::string::npos);
}

TEST(CheckDestination, HttpAllowed) {
    using D = DenyReason;
    constexpr auto connect = EgressKind::connect;
    constexpr auto http = EgressKind::plain_http;
    EgressPolicy p = sample_policy();
    p.allow_http = true;
    expect_destinations(p, {
                               {"api.example.com:80", http, D::none},
                               {"api.example.com:443", http, D::port_not_allowed},
                               {"api.example.com:443", connect, D::none},
                               {"api.example.com:80", connect, D::port_not_allowed},
                               {"custom.example.org:8443", http, D::none},
                               {"custom.example.org:80", http, D::port_not_allowed},
                               {"other.example:80", http, D::domain_not_allowed},
                               {"8.8.8.8:80", http, D::none},
                               {"10.0.0.1:80", http, D::ip_literal_not_allowed},
                           });
}

TEST(CheckDestination, HttpsDisabled) {
    EgressPolicy p = sample_policy();
    p.allow_https = false;
    EXPECT_EQ(check_destination(p, dest("api.example.com:443"), EgressKind::connect), DenyReason::https_not_allowed);
    EXPECT_EQ(check_destination(p, dest("8.8.8.8:443"), EgressKind::connect), DenyReason::https_not_allowed);
}

TEST(CheckDestination, PackageManagerBundle) {
    using D = DenyReason;
    constexpr auto connect = EgressKind::connect;
    constexpr auto http = EgressKind::plain_http;
    EgressPolicy p;
    p.allow_package_managers = true;
    expect_destinations(p, {
                               {"pypi.org:443", connect, D::none},
                               {"files.pythonhosted.org:443", connect, D::none},
                               {"registry.npmjs.org:443", connect, D::none},
                               {"deb.debian.org:443", connect, D::none},
                               {"static.crates.io:443", connect, D::none},
                               {"proxy.golang.org:443", connect, D::none},
                               {"repo1.maven.org:443", connect, D::none},
                               {"pypi.org:80", connect, D::port_not_allowed},
                               {"pypi.org:8443", connect, D::port_not_allowed},
                               {"deb.debian.org:80", http, D::http_not_allowed},
                               {"evil.pypi.org:443", connect, D::domain_not_allowed},
                               {"pypi.org.evil.com:443", connect, D::domain_not_allowed},
                               {"pythonhosted.org:443", connect, D::domain_not_allowed},
                               {"github.com:443", connect, D::domain_not_allowed},
                           });
    p.allow_http = true;
    expect_destinations(p, {
                               {"deb.debian.org:80", http, D::none},
                               {"archive.ubuntu.com:80", http, D::none},
                               {"deb.debian.org:443", connect, D::none},
                           });
    // A policy's own rule and the bundle are looked at together.
    p.allowed_domains = {rule("pypi.org:8443")};
    expect_destinations(p, {
                               {"pypi.org:8443", connect, D::none},
                               {"pypi.org:443", connect, D::none},
                               {"pypi.org:9999", connect, D::port_not_allowed},
                           });
}

TEST(PackageManagerDomains, ReviewableBundle) {
    const std::set<std::string> expected = {
        "pypi.org",           "files.pythonhosted.org", "registry.npmjs.org",
        "deb.debian.org",     "security.debian.org",    "ftp.debian.org",
        "archive.ubuntu.com", "security.ubuntu.com",    "ports.ubuntu.com",
        "crates.io",          "static.crates.io",       "index.crates.io",
        "proxy.golang.org",   "sum.golang.org",         "rubygems.org",
        "index.rubygems.org", "repo.maven.apache.org",  "repo1.maven.org",
    };
    const auto& bundle = package_manager_domains();
    std::set<std::string> hosts;
    for (const auto& r : bundle) {
        SCOPED_TRACE(r.host);
        EXPECT_FALSE(r.wildcard);
        EXPECT_FALSE(r.port);
        // Written in normalised form, as the matcher expects.
        HostResult n = normalize_host(r.host);
        ASSERT_TRUE(n);
        EXPECT_EQ(*n.host, r.host);
        EXPECT_EQ(n.kind, HostKind::name);
        hosts.insert(r.host);
    }
    EXPECT_EQ(hosts.size(), bundle.size()) << "duplicate entries";
    EXPECT_EQ(hosts, expected);
    EXPECT_EQ(&package_manager_domains(), &bundle);
}

TEST(CheckAddress, ByClass) {
    using D = DenyReason;
    struct Case {
        std::string addr;
        DenyReason expected;
    };
    const std::vector<Case> cases = {
        {"8.8.8.8", D::none},
        {"172.32.0.1", D::none},
        {"2606:4700:4700::1111", D::none},
        {"::ffff:8.8.8.8", D::none},
        {"169.254.169.254", D::metadata_address},
        {"169.254.170.2", D::metadata_address},
        {"100.100.100.200", D::metadata_address},
        {"fd00:ec2::254", D::metadata_address},
        {"::ffff:169.254.169.254", D::metadata_address},
        {"::169.254.169.254", D::metadata_address},
        {"64:ff9b::a9fe:a9fe", D::metadata_address},
        {"2002:a9fe:a9fe::", D::metadata_address},
        {"127.0.0.1", D::loopback_address},
        {"127.0.0.2", D::loopback_address},
        {"::1", D::loopback_address},
        {"::ffff:127.0.0.1", D::loopback_address},
        {"0.0.0.0", D::private_address},
        {"::", D::private_address},
        {"10.0.0.1", D::private_address},
        {"172.16.0.1", D::private_address},
        {"172.31.255.254", D::private_address},
        {"192.168.1.1", D::private_address},
        {"100.64.0.1", D::private_address},
        {"169.254.1.1", D::private_address},
        {"fe80::1", D::private_address},
        {"fd00::1", D::private_address},
        {"fc00::1", D::private_address},
        {"224.0.0.1", D::reserved_address},
        {"ff02::1", D::reserved_address},
        {"255.255.255.255", D::reserved_address},
        {"192.0.2.1", D::reserved_address},
        {"2001:db8::1", D::reserved_address},
        {"240.0.0.1", D::reserved_address},
        {"198.18.0.1", D::reserved_address},
    };
    EgressPolicy p;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.addr);
        EXPECT_EQ(deny_reason_name(check_address(p, parsed_ip(c.addr), false)), deny_reason_name(c.expected));
        // An operator-pinned address (upstream.resolve) is exempt.
        EXPECT_EQ(check_address(p, parsed_ip(c.addr), true), D::none);
    }
}

TEST(CheckAddress, AllowedCidrsOverrideTheClass) {
    EgressPolicy p;
    p.allowed_cidrs = {cidr("10.0.0.0/8"), cidr("169.254.169.254"), cidr("fd00::/8")};
    EXPECT_EQ(check_address(p, parsed_ip("10.1.2.3"), false), DenyReason::none);
    EXPECT_EQ(check_address(p, parsed_ip("::ffff:10.1.2.3"), false), DenyReason::none);
    EXPECT_EQ(check_address(p, parsed_ip("169.254.169.254"), false), DenyReason::none);
    EXPECT_EQ(check_address(p, parsed_ip("fd12::1"), false), DenyReason::none);
    EXPECT_EQ(check_address(p, parsed_ip("192.168.1.1"), false), DenyReason::private_address);
    EXPECT_EQ(check_address(p, parsed_ip("169.254.170.2"), false), DenyReason::metadata_address);
    EXPECT_EQ(check_address(p, parsed_ip("127.0.0.1"), false), DenyReason::loopback_address);
}

// What `vaultgate explain` reports: the key that decided and the entry of the
// list that matched, by the same code that decides.
TEST(JudgeDestination, NamesTheKeyAndTheRule) {
    EgressPolicy p = sample_policy();
    p.allow_package_managers = true;
    const auto exact = judge_destination(p, dest("api.example.com:443"), EgressKind::connect);
    EXPECT_EQ(exact.reason, DenyReason::none);
    EXPECT_EQ(policy_key_name(exact.key), "allowed_domains");
    ASSERT_NE(exact.domain, nullptr);
    EXPECT_EQ(exact.domain, &p.allowed_domains[0]);

    const auto port = judge_destination(p, dest("custom.example.org:443"), EgressKind::connect);
    EXPECT_EQ(port.reason, DenyReason::port_not_allowed);
    EXPECT_EQ(port.domain, &p.allowed_domains[2]);

    const auto bundle = judge_destination(p, dest("pypi.org:443"), EgressKind::connect);
    EXPECT_EQ(bundle.reason, DenyReason::none);
    EXPECT_EQ(policy_key_name(bundle.key), "allow_package_managers");
    ASSERT_NE(bundle.domain, nullptr);
    EXPECT_EQ(bundle.domain->host, "pypi.org");

    const auto none = judge_destination(p, dest("other.example:443"), EgressKind::connect);
    EXPECT_EQ(none.reason, DenyReason::domain_not_allowed);
    EXPECT_EQ(none.domain, nullptr);

    const auto literal = judge_destination(p, dest("8.8.8.8:443"), EgressKind::connect);
    EXPECT_EQ(policy_key_name(literal.key), "allowed_cidrs");
    EXPECT_EQ(literal.cidr, &p.allowed_cidrs[0]);

    p.allow_https = false;
    const auto off = judge_destination(p, dest("api.example.com:443"), EgressKind::connect);
    EXPECT_EQ(off.reason, DenyReason::https_not_allowed);
    EXPECT_EQ(policy_key_name(off.key), "allow_https");
    EXPECT_EQ(policy_key_name(judge_destination(p, dest("api.example.com:80"), EgressKind::plain_http).key),
              "allow_http");
}

TEST(JudgeAddress, NamesWhatAllowedOrDenied) {
    EgressPolicy p;
    p.allowed_cidrs = {cidr("10.0.0.0/8")};
    const auto listed = judge_address(p, parsed_ip("10.1.2.3"), true);
    EXPECT_EQ(listed.reason, DenyReason::none);
    EXPECT_EQ(policy_key_name(listed.key), "allowed_cidrs");
    EXPECT_EQ(listed.cidr, &p.allowed_cidrs[0]);
    EXPECT_EQ(address_class_name(listed.address_class), "private_network");

    const auto pinned = judge_address(p, parsed_ip("192.168.1.1"), true);
    EXPECT_EQ(pinned.reason, DenyReason::none);
    EXPECT_EQ(policy_key_name(pinned.key), "upstream.resolve");

    const auto by_class = judge_address(p, parsed_ip("169.254.169.254"), false);
    EXPECT_EQ(by_class.reason, DenyReason::metadata_address);
    EXPECT_EQ(policy_key_name(by_class.key), "address_class");
    EXPECT_EQ(address_class_name(by_class.address_class), "metadata");
}

// The literature's ways of reaching the metadata service or loopback, end to
// end: each is refused at parsing, at the name check or at the address check.
TEST(SsrfLiterature, NeverReachesInternalAddresses) {
    const std::vector<std::string> refused_at_parse = {
        "2852039166:80", "0xa9fea9fe:80", "0xa9.0xfe.0xa9.0xfe:80", "0251.0376.0251.0376:80", "169.16689662:80",
        "127.1:80",      "0x7f.1:80",     "2130706433:80",          "[fe80::1%25eth0]:80",
    };
    for (const auto& a : refused_at_parse) {
        SCOPED_TRACE(a);
        EXPECT_FALSE(parse_authority(a, 0));
    }
    EgressPolicy p;
    p.allow_http = true;
    p.allowed_domains = {rule("*.example.com")};
    const std::vector<std::string> literals = {
        "169.254.169.254:80",
        "0.0.0.0:80",
        "[::]:80",
        "[::1]:80",
        "[::ffff:169.254.169.254]:80",
        "[::169.254.169.254]:80",
        "[64:ff9b::a9fe:a9fe]:80",
        "[2002:a9fe:a9fe::]:80",
        "100.64.0.1:80",
        "10.0.0.1:80",
        "172.16.0.1:80",
        "192.168.0.1:80",
    };
    for (const auto& a : literals) {
        SCOPED_TRACE(a);
        Authority d = dest(a);
        EXPECT_EQ(check_destination(p, d, EgressKind::connect), DenyReason::ip_literal_not_allowed);
        EXPECT_NE(check_address(p, parsed_ip(d.host), false), DenyReason::none);
    }
    EXPECT_EQ(check_destination(p, dest("metadata.google.internal:80"), EgressKind::plain_http),
              DenyReason::domain_not_allowed);
}

TEST(DenyReasonName, ExactContractNames) {
    using D = DenyReason;
    const std::vector<std::pair<D, std::string>> cases = {
        {D::none, "none"},
        {D::domain_not_allowed, "domain_not_allowed"},
        {D::port_not_allowed, "port_not_allowed"},
        {D::http_not_allowed, "http_not_allowed"},
        {D::https_not_allowed, "https_not_allowed"},
        {D::ip_literal_not_allowed, "ip_literal_not_allowed"},
        {D::private_address, "private_address"},
        {D::metadata_address, "metadata_address"},
        {D::loopback_address, "loopback_address"},
        {D::reserved_address, "reserved_address"},
        {D::self_connection, "self_connection"},
        {D::resolve_failed, "resolve_failed"},
        {D::session_required, "session_required"},
    };
    for (const auto& [reason, name] : cases) EXPECT_EQ(deny_reason_name(reason), name);
}

const std::vector<DenyReason> k_all_reasons = {
    DenyReason::none,
    DenyReason::domain_not_allowed,
    DenyReason::port_not_allowed,
    DenyReason::http_not_allowed,
    DenyReason::https_not_allowed,
    DenyReason::ip_literal_not_allowed,
    DenyReason::private_address,
    DenyReason::metadata_address,
    DenyReason::loopback_address,
    DenyReason::reserved_address,
    DenyReason::self_connection,
    DenyReason::resolve_failed,
    DenyReason::session_required,
};

TEST(DenyReasonAdvice, NamesTheConfigKey) {
    struct Case {
        DenyReason reason;
        std::string authority;
        std::vector<std::string> contains;
    };
    const std::vector<Case> cases = {
        {DenyReason::domain_not_allowed,
         "api.example.com:443",
         {"\"api.example.com\"", "egress_policies.<policy>.allowed_domains"}},
        {DenyReason::domain_not_allowed, "api.example.com:8443", {"\"api.example.com:8443\"", "allowed_domains"}},
        {DenyReason::port_not_allowed, "api.example.com:8443", {"\"api.example.com:8443\"", "allowed_domains"}},
        {DenyReason::http_not_allowed, "api.example.com:80", {"allow_http"}},
        {DenyReason::https_not_allowed, "api.example.com:443", {"allow_https"}},
        {DenyReason::ip_literal_not_allowed, "8.8.4.4:443", {"\"8.8.4.4/32\"", "allowed_cidrs"}},
        {DenyReason::ip_literal_not_allowed, "[2001:db8::1]:443", {"\"2001:db8::1/128\"", "\"[2001:db8::1]:443\""}},
        {DenyReason::private_address, "intranet.example:443", {"allowed_cidrs"}},
        {DenyReason::metadata_address, "metadata.google.internal:80", {"metadata", "allowed_cidrs"}},
        {DenyReason::loopback_address, "localhost:443", {"allowed_cidrs"}},
        {DenyReason::reserved_address, "x.example:443", {"allowed_cidrs"}},
        {DenyReason::self_connection, "127.0.0.1:3128", {"listen."}},
        {DenyReason::resolve_failed, "nx.example:443", {"upstream.resolve"}},
        {DenyReason::session_required, "api.example.com:443", {"Proxy-Authorization", "sessions.default"}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(std::string(deny_reason_name(c.reason)) + " " + c.authority);
        std::string advice = deny_reason_advice(c.reason, dest(c.authority));
        for (const auto& needle : c.contains) EXPECT_NE(advice.find(needle), std::string::npos) << advice;
    }
    for (DenyReason r : k_all_reasons) {
        std::string advice = deny_reason_advice(r, dest("api.example.com:443"));
        SCOPED_TRACE(advice);
        ASSERT_FALSE(advice.empty());
        EXPECT_EQ(advice.back(), '.');
        EXPECT_EQ(advice.find('\n'), std::string::npos);
    }
}

TEST(DenyReasonAdvice, NeverEchoesRawBytes) {
    // A caller that forgets to normalise must not turn the advice into a
    // header-injection or reflection channel.
    Authority raw{"evil.example\r\nX-Injected: 1", 443, HostKind::name};
    for (DenyReason r : k_all_reasons) {
        std::string advice = deny_reason_advice(r, raw);
        SCOPED_TRACE(advice);
        EXPECT_EQ(advice.find('\r'), std::string::npos);
        EXPECT_EQ(advice.find('\n'), std::string::npos);
        EXPECT_EQ(advice.find("evil"), std::string::npos);
        EXPECT_EQ(advice.find("Injected"), std::string::npos);
    }
}

}  // namespace
}  // namespace vaultgate
