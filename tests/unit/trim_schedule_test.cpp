#include "vaultgate/trim_schedule.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

TEST(TrimScheduleTest, AQuietGatewayIsNotTrimmed) {
    TrimSchedule s;
    for (int tick = 0; tick < 10; ++tick) EXPECT_FALSE(s.due(0, 0)) << tick;
}

TEST(TrimScheduleTest, TrimsWhenConnectionsChangeAndWhileTheySettle) {
    TrimSchedule s;
    EXPECT_TRUE(s.due(5, 5));   // opened
    EXPECT_TRUE(s.due(5, 5));   // settling: idle ones shed their buffers
    EXPECT_TRUE(s.due(5, 5));
    EXPECT_FALSE(s.due(5, 5));  // steady
    EXPECT_FALSE(s.due(5, 5));
    EXPECT_TRUE(s.due(5, 2));   // three closed
    EXPECT_TRUE(s.due(5, 2));
    EXPECT_TRUE(s.due(5, 2));
    EXPECT_FALSE(s.due(5, 2));
    // One opened and one closed between ticks: the active count is unchanged,
    // the opened count is not.
    EXPECT_TRUE(s.due(6, 2));
}

}  // namespace
}  // namespace vaultgate
