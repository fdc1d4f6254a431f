// Where a bound service may point, by table: this machine, vaultgate's own
// listeners, link-local and metadata addresses and public-suffix wildcards are
// refused; ordinary names, private addresses and registrable wildcards are not.
#include "vaultgate/config/service_binding.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

struct BindingCase {
    const char* host;  // as check_service_host normalises it
    std::uint16_t port;
    const char* code;  // "" when the binding is allowed
};

const std::vector<ListenAddress> listeners = {
    {"10.0.0.5", 3128, {}},  // proxy
    {"fd12::7", 3190, {}},   // admin
    {"192.0.2.9", 0, {}},    // transparent, port chosen at start
    {"", 0, "/run/vaultgate/admin.sock"},
};

TEST(ServiceBindingTest, ByTable) {
    const BindingCase cases[] = {
        // This machine and what it alone can reach.
        {"127.0.0.1", 443, "forbidden_address"},
        {"127.8.9.10", 443, "forbidden_address"},
        {"::1", 443, "forbidden_address"},
        {"::ffff:127.0.0.1", 443, "forbidden_address"},
        {"0.0.0.0", 443, "forbidden_address"},
        {"::", 443, "forbidden_address"},
        {"169.254.1.2", 443, "forbidden_address"},
        {"fe80::1", 443, "forbidden_address"},
        {"169.254.169.254", 80, "forbidden_address"},
        {"fd00:ec2::254", 443, "forbidden_address"},
        {"100.100.100.200", 443, "forbidden_address"},
        {"localhost", 443, "forbidden_address"},
        {"api.localhost", 443, "forbidden_address"},
        {"*.localhost", 443, "forbidden_address"},
        // vaultgate's own listeners, on their port; any port when it is chosen at start.
        {"10.0.0.5", 3128, "own_listener"},
        {"::ffff:10.0.0.5", 3128, "own_listener"},
        {"fd12::7", 3190, "own_listener"},
        {"192.0.2.9", 8443, "own_listener"},
        {"10.0.0.5", 443, ""},
        {"fd12::7", 443, ""},
        // Wildcards over a public suffix, ICANN or private section.
        {"*.com", 443, "public_suffix_wildcard"},
        {"*.co.uk", 443, "public_suffix_wildcard"},
        {"*.github.io", 443, "public_suffix_wildcard"},
        {"*.s3.amazonaws.com", 443, "public_suffix_wildcard"},
        {"*.xn--55qx5d.cn", 443, "public_suffix_wildcard"},
        {"*.example.co.uk", 443, ""},
        {"*.example.com", 443, ""},
        {"*.corp.internal", 443, ""},
        // Ordinary destinations.
        {"api.example.com", 443, ""},
        {"co.uk", 443, ""},
        {"10.1.2.3", 9000, ""},
        {"192.168.1.10", 443, ""},
        {"2001:db8::1", 443, ""},
        {"203.0.113.7", 443, ""},
        {"localhost.example.com", 443, ""},
    };
    for (const auto& c : cases) {
        const auto refusal = check_service_binding(c.host, c.port, listeners);
        if (*c.code == '\0') {
            EXPECT_FALSE(refusal) << c.host << ":" << c.port << " refused: " << refusal->message;
            continue;
        }
        ASSERT_TRUE(refusal) << c.host << ":" << c.port << " allowed";
        EXPECT_EQ(refusal->code, c.code) << c.host << ":" << c.port;
        EXPECT_FALSE(refusal->message.empty());
    }
}

TEST(ServiceBindingTest, MessagesSayWhatTheHostIs) {
    const auto metadata = check_service_binding("169.254.169.254", 443, {});
    ASSERT_TRUE(metadata);
    EXPECT_EQ(metadata->message, "169.254.169.254 is a cloud metadata address; a credential is never bound to it");
    const auto own = check_service_binding("10.0.0.5", 3128, listeners);
    ASSERT_TRUE(own);
    EXPECT_EQ(own->message, "10.0.0.5:3128 is one of vaultgate's own listeners");
    const auto suffix = check_service_binding("*.github.io", 443, {});
    ASSERT_TRUE(suffix);
    EXPECT_NE(suffix->message.find("*.github.io covers every domain under the public suffix github.io"),
              std::string::npos)
        << suffix->message;
}

TEST(ServiceBindingTest, OwnListenersAreTheConfigsTcpListeners) {
    Config config;
    config.listen_proxy = {"10.0.0.5", 3128, {}};
    config.listen_admin = {"", 0, "/run/vaultgate/admin.sock"};
    auto got = own_listeners(config);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].to_string(), "10.0.0.5:3128");
    config.listen_transparent = ListenAddress{"10.0.0.5", 3129, {}};
    config.listen_admin = {"127.0.0.1", 3190, {}};
    got = own_listeners(config);
    ASSERT_EQ(got.size(), 3u);
}

}  // namespace
}  // namespace vaultgate
