#include "vaultgate/trim_schedule.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

TEST(TrimScheduleTest, AQuietGatewayIsNotTrimmed) {
    TrimSchedule s;
    for (int tick = 0; tick < 10; ++tick) EXPECT_FALSE(s.due(0, 0, 0)) << tick;
}

TEST(TrimScheduleTest, TrimsAfterActivityAndWhileItSettles) {
    TrimSchedule s;
    EXPECT_TRUE(s.due(5, 5, 0));   // opened
    EXPECT_TRUE(s.due(5, 5, 0));   // settling: idle ones shed their buffers
    EXPECT_TRUE(s.due(5, 5, 0));
    EXPECT_FALSE(s.due(5, 5, 0));  // steady
    EXPECT_FALSE(s.due(5, 5, 0));
    EXPECT_TRUE(s.due(5, 2, 0));   // three closed
    EXPECT_TRUE(s.due(5, 2, 0));
    EXPECT_TRUE(s.due(5, 2, 0));
    EXPECT_FALSE(s.due(5, 2, 0));
    // One opened and one closed between ticks: the active count is unchanged,
    // the opened count is not.
    EXPECT_TRUE(s.due(6, 2, 0));
    for (int tick = 0; tick < 2; ++tick) EXPECT_TRUE(s.due(6, 2, 0));
    EXPECT_FALSE(s.due(6, 2, 0));
    // Requests on the same keep-alive connections count as activity too.
    EXPECT_TRUE(s.due(6, 2, 40));
}

TEST(TrimScheduleTest, ActivityWhileSettlingStartsTheSettlingAgain) {
    TrimSchedule s;
    EXPECT_TRUE(s.due(1, 1, 0));
    EXPECT_TRUE(s.due(1, 1, 0));
    EXPECT_TRUE(s.due(2, 2, 0));  // a change during the settling ticks
    EXPECT_TRUE(s.due(2, 2, 0));
    EXPECT_TRUE(s.due(2, 2, 0));
    EXPECT_FALSE(s.due(2, 2, 0));
}

}  // namespace
}  // namespace vaultgate
