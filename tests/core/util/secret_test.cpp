#include "vaultgate/util/secret.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

TEST(WithoutLineEndingTest, DropsOneTrailingNewlineOnly) {
    struct Case {
        std::string_view text, want;
    } const cases[] = {
        {"key", "key"},
        {"key\n", "key"},
        {"key\r\n", "key"},
        {"key\n\n", "key\n"},
        {"key\r\n\r\n", "key\r\n"},
        {"key\r", "key\r"},
        {" key \n", " key "},
        {"\n", ""},
        {"", ""},
    };
    for (const auto& c : cases) EXPECT_EQ(without_line_ending(c.text), c.want) << testing::PrintToString(c.text);
}

}  // namespace
}  // namespace vaultgate
