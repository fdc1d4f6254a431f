// Where each key is in the config file, kept for the checks made after
// parsing (check-config's pre-flight), so that they too name file:line:col.
#include "vaultgate/config/config.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

const char* const text =
    "# a comment first\n"
    "upstream:\n"
    "  ca_file: /etc/ca.pem\n"
    "admin:\n"
    "  token_file: null\n"
    "vaults:\n"
    "  - name: team\n"
    "    credentials:\n"
    "      API.KEY: { file: /run/key }\n";

TEST(ConfigPositions, EveryKeyGivenHasThePlaceOfItsValue) {
    const auto cfg = parse_config(text, "t.yaml");
    EXPECT_EQ(cfg.place_of("upstream.ca_file"), "t.yaml:3:12");
    EXPECT_EQ(cfg.place_of("upstream"), "t.yaml:3:3");
    EXPECT_EQ(cfg.place_of("vaults[0]"), "t.yaml:7:5");
    EXPECT_EQ(cfg.place_of("vaults[0].name"), "t.yaml:7:11");
    // A credential name may hold a dot; the path is the one the readers use.
    EXPECT_EQ(cfg.place_of("vaults[0].credentials.API.KEY.file"), "t.yaml:9:24");
    // An empty value has no place of its own: its key's.
    EXPECT_EQ(cfg.place_of("admin.token_file"), "t.yaml:5:3");
}

TEST(ConfigPositions, AKeyLeftAtItsDefaultHasThePlaceOfItsSection) {
    const auto cfg = parse_config(text, "t.yaml");
    const auto upstream = cfg.position_of("upstream");
    const auto resolve = cfg.position_of("upstream.resolve");
    EXPECT_EQ(resolve.line, upstream.line);
    EXPECT_EQ(resolve.column, upstream.column);
    EXPECT_EQ(cfg.place_of("vaults[0].services"), cfg.place_of("vaults[0]"));
    // Neither the key nor its section in the file: the top of the file.
    EXPECT_EQ(cfg.place_of("ca.key"), "t.yaml:1:1");
    EXPECT_EQ(cfg.place_of("store.master_key_file"), "t.yaml:1:1");
}

}  // namespace
}  // namespace vaultgate
