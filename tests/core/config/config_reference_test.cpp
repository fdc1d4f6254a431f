// docs/reference/configuration.md against the loader: its complete example
// must load, and the defaults it writes out must be the loader's defaults.
#include "vaultgate/config/config.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace vaultgate {
namespace {

// The yaml block under "## A complete example".
std::string complete_example() {
    std::ifstream in(std::string(VAULTGATE_SOURCE_DIR) + "/docs/reference/configuration.md");
    std::string line;
    bool in_section = false;
    bool in_block = false;
    std::ostringstream out;
    while (std::getline(in, line)) {
        if (line == "## A complete example")
            in_section = true;
        else if (in_section && !in_block && line == "```yaml")
            in_block = true;
        else if (in_block && line == "```")
            return out.str();
        else if (in_block)
            out << line << "\n";
    }
    return {};
}

TEST(ConfigReferenceTest, TheCompleteExampleLoadsWithTheDocumentedDefaults) {
    const auto text = complete_example();
    ASSERT_FALSE(text.empty()) << "no complete example in docs/reference/configuration.md";
    const Config c = parse_config(text, "configuration.md");
    const Config defaults = parse_config("{}\n", "defaults.yaml");

    // Every limit is written out at its default.
    const Limits& l = c.limits;
    const Limits& d = defaults.limits;
    EXPECT_EQ(l.max_connections, d.max_connections);
    EXPECT_EQ(l.max_connections_per_client, d.max_connections_per_client);
    EXPECT_EQ(l.header_bytes, d.header_bytes);
    EXPECT_EQ(l.header_count, d.header_count);
    EXPECT_EQ(l.handshake_timeout, d.handshake_timeout);
    EXPECT_EQ(l.header_timeout, d.header_timeout);
    EXPECT_EQ(l.idle_timeout, d.idle_timeout);
    EXPECT_EQ(l.drain_timeout, d.drain_timeout);
    EXPECT_EQ(l.connect_timeout, d.connect_timeout);
    EXPECT_EQ(l.response_timeout, d.response_timeout);
    EXPECT_EQ(l.upstream_idle_timeout, d.upstream_idle_timeout);
    EXPECT_EQ(l.worker_threads, d.worker_threads);
    EXPECT_EQ(l.admin_connections, d.admin_connections);
    EXPECT_EQ(l.sign_body_bytes, d.sign_body_bytes);
    EXPECT_EQ(l.h2_max_concurrent_streams, d.h2_max_concurrent_streams);
    EXPECT_EQ(c.mitm_alpn, defaults.mitm_alpn);

    // And so are these; the rest of the example departs from the defaults.
    EXPECT_EQ(c.listen_proxy.to_string(), defaults.listen_proxy.to_string());
    EXPECT_EQ(c.listen_transparent.has_value(), defaults.listen_transparent.has_value());
    EXPECT_EQ(c.upstream_ca_file, defaults.upstream_ca_file);
    EXPECT_EQ(c.upstream_resolve, defaults.upstream_resolve);
    EXPECT_EQ(c.store_master_key_file, defaults.store_master_key_file);
    EXPECT_EQ(c.admin_token_file, defaults.admin_token_file);
    EXPECT_EQ(c.log_access, defaults.log_access);
    EXPECT_EQ(c.log_level, defaults.log_level);

    EXPECT_EQ(c.listen_admin.to_string(), "unix:/run/vaultgate/admin.sock");
    ASSERT_EQ(c.vaults.size(), 1u);
    EXPECT_EQ(c.sessions.at("default").vaults, std::vector<std::string>{"composio"});
    EXPECT_FALSE(c.egress_policies.at("default").allow_http);
}

}  // namespace
}  // namespace vaultgate
