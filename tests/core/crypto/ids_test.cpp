#include "vaultgate/crypto/ids.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace vaultgate {
namespace {

TEST(RandomId, PrefixAndAlphabet) {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto id = random_id("vlt_");
        ASSERT_EQ(id.size(), 24u);
        EXPECT_TRUE(id.starts_with("vlt_"));
        EXPECT_EQ(id.substr(4).find_first_not_of("abcdefghijklmnopqrstuvwxyz234567"), std::string::npos) << id;
        seen.insert(id);
    }
    EXPECT_EQ(seen.size(), 200u);
    EXPECT_TRUE(random_id("ses_").starts_with("ses_"));
}

TEST(RandomToken, Base64UrlOf32Bytes) {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const auto t = random_token();
        ASSERT_EQ(t.size(), 43u);
        EXPECT_EQ(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                  std::string::npos)
            << t;
        seen.insert(t);
    }
    EXPECT_EQ(seen.size(), 200u);
}

}  // namespace
}  // namespace vaultgate
