#include "vaultgate/util/encoding.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

// RFC 4648 section 10.
TEST(EncodingTest, Base64TestVectors) {
    const std::pair<const char*, const char*> vectors[] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (const auto& [plain, encoded] : vectors) {
        EXPECT_EQ(base64_encode(plain, Base64Alphabet::standard, true), encoded) << plain;
        EXPECT_EQ(base64_decode(encoded), plain) << encoded;
        std::string unpadded = encoded;
        while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
        EXPECT_EQ(base64_encode(plain, Base64Alphabet::standard, false), unpadded) << plain;
        EXPECT_EQ(base64_decode(unpadded), plain) << unpadded;
    }
}

TEST(EncodingTest, TheAlphabetsDifferInTheirLastTwoLetters) {
    const std::string bytes = "\xfb\xff\xbf";
    EXPECT_EQ(base64_encode(bytes, Base64Alphabet::standard, true), "+/+/");
    EXPECT_EQ(base64_encode(bytes, Base64Alphabet::url, true), "-_-_");
}

TEST(EncodingTest, AppendingKeepsWhatIsThere) {
    std::string out = "Basic ";
    append_base64(out, "bot:secret", Base64Alphabet::standard, true);
    EXPECT_EQ(out, "Basic Ym90OnNlY3JldA==");
    out = "k=";
    append_percent_encoded(out, "a b/c");
    EXPECT_EQ(out, "k=a%20b%2Fc");
}

TEST(EncodingTest, Base64DecodeRefusesWhatIsNotBase64) {
    for (const char* bad : {"Zm9v!", "Z", "Zm9vY", "Zg===", "Zm8==", "-_-_", "Zm 9v"})
        EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
}

TEST(EncodingTest, PercentEncodingLeavesOnlyUnreservedBytes) {
    EXPECT_EQ(percent_encode("AZaz09-._~"), "AZaz09-._~");
    EXPECT_EQ(percent_encode("sk/+= \x01\xff"), "sk%2F%2B%3D%20%01%FF");
    EXPECT_EQ(percent_encode("sk/+=", false), "sk%2f%2b%3d");
    EXPECT_EQ(percent_encoded_size("a/b"), 5u);
}

// As Python's urllib.parse.quote_plus: a space is '+', a '+' is escaped.
TEST(EncodingTest, FormEncodingWritesASpaceAsPlus) {
    std::string out = "scope=";
    append_form_encoded(out, "read write:all a+b~c/\xc3\xa9");
    EXPECT_EQ(out, "scope=read+write%3Aall+a%2Bb~c%2F%C3%A9");
    EXPECT_EQ(form_encoded_size("a b/"), 6u);
    out.clear();
    append_form_encoded(out, "AZaz09-._~");
    EXPECT_EQ(out, "AZaz09-._~");
}

TEST(EncodingTest, HexEncodingWritesTwoDigitsPerByteInEitherCase) {
    EXPECT_EQ(hex_encode(std::string_view("sk/\x00\xff", 5), false), "736b2f00ff");
    EXPECT_EQ(hex_encode(std::string_view("sk/\x00\xff", 5), true), "736B2F00FF");
    EXPECT_EQ(hex_encode("", true), "");
}

TEST(HexDigitValue, ReadsBothCasesAndRefusesEverythingElse) {
    EXPECT_EQ(hex_digit_value('0'), 0);
    EXPECT_EQ(hex_digit_value('9'), 9);
    EXPECT_EQ(hex_digit_value('a'), 10);
    EXPECT_EQ(hex_digit_value('F'), 15);
    for (char c : std::string_view("gG/:@`% \0", 9)) EXPECT_EQ(hex_digit_value(c), -1) << int(c);
}

}  // namespace
}  // namespace vaultgate
