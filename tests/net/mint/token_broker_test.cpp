// The token broker's rule that needs no endpoint: the backoff window.
#include "net/mint/token_broker.hpp"

#include <gtest/gtest.h>


namespace vaultgate::net {
namespace {

using std::chrono::seconds;

TEST(TokenBackoff, DoublesFromOneSecondToThirty) {
    EXPECT_EQ(token_backoff(1), seconds(1));
    EXPECT_EQ(token_backoff(2), seconds(2));
    EXPECT_EQ(token_backoff(3), seconds(4));
    EXPECT_EQ(token_backoff(5), seconds(16));
    EXPECT_EQ(token_backoff(6), seconds(30));
    EXPECT_EQ(token_backoff(1000), seconds(30));
}

}  // namespace
}  // namespace vaultgate::net
