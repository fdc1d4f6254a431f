// The store section's settings for a shared store's local snapshot: their
// defaults, and the values a config gives.
#include "vaultgate/config/config.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

TEST(StoreSettingsTest, ASnapshotHasDefaultsAndTakesItsSettings) {
    const Config d = parse_config("store:\n  url: postgresql://db/vaultgate\n", "d.yaml");
    EXPECT_FALSE(d.store_snapshot_path.has_value());
    EXPECT_EQ(d.store_snapshot_interval, std::chrono::seconds(10));
    EXPECT_EQ(d.store_snapshot_max_age, std::chrono::hours(24));
    const Config c = parse_config(
        "store:\n  url: postgresql://db/vaultgate\n  snapshot_path: /var/lib/vaultgate/snap.db\n"
        "  snapshot_interval: 30s\n  snapshot_max_age: 2h\n",
        "s.yaml");
    EXPECT_EQ(c.store_snapshot_path, "/var/lib/vaultgate/snap.db");
    EXPECT_EQ(c.store_snapshot_interval, std::chrono::seconds(30));
    EXPECT_EQ(c.store_snapshot_max_age, std::chrono::hours(2));
}

}  // namespace
}  // namespace vaultgate
