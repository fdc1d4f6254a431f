#include "vaultgate/observe/warn_limiter.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

using namespace std::chrono;

TEST(WarnLimiterTest, OneLinePerKeyPerIntervalThenTheCountHeldBack) {
    WarnLimiter limiter(seconds(10));
    const auto t0 = WarnLimiter::clock::time_point{} + hours(1);
    EXPECT_EQ(limiter.admit("refused a:443", "first", t0), "first");
    EXPECT_EQ(limiter.admit("refused a:443", "second", t0 + seconds(1)), std::nullopt);
    EXPECT_EQ(limiter.admit("refused a:443", "third", t0 + seconds(9)), std::nullopt);
    // Another reason or destination has a slot of its own.
    EXPECT_EQ(limiter.admit("refused b:443", "other host", t0 + seconds(2)), "other host");
    EXPECT_EQ(limiter.admit("timeout a:443", "other reason", t0 + seconds(2)), "other reason");
    EXPECT_EQ(limiter.admit("refused a:443", "fourth", t0 + seconds(10)), "fourth (2 more since the last such line)");
    // Nothing held back since: a plain line again.
    EXPECT_EQ(limiter.admit("refused a:443", "fifth", t0 + seconds(21)), "fifth");
}

TEST(WarnLimiterTest, AFullTableForgetsQuietKeysAndNeverHoldsBackAnUnseenOne) {
    WarnLimiter limiter(seconds(10), 2);
    const auto t0 = WarnLimiter::clock::time_point{} + hours(1);
    EXPECT_TRUE(limiter.admit("a", "a", t0));
    EXPECT_TRUE(limiter.admit("b", "b", t0));
    EXPECT_FALSE(limiter.admit("b", "b", t0 + seconds(1)));
    // Full, and no slot is quiet yet: "c" passes without being remembered.
    EXPECT_TRUE(limiter.admit("c", "c", t0 + seconds(2)));
    EXPECT_TRUE(limiter.admit("c", "c", t0 + seconds(3)));
    EXPECT_FALSE(limiter.admit("a", "a", t0 + seconds(3)));
    // "a" is quiet after its interval, but holds a count, as does "b": both stay.
    EXPECT_TRUE(limiter.admit("d", "d", t0 + seconds(11)));
    EXPECT_EQ(limiter.admit("b", "b", t0 + seconds(12)), "b (1 more since the last such line)");
}

}  // namespace
}  // namespace vaultgate
