#include "vaultgate/util/json_text.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace vaultgate {
namespace {

std::string as_json(std::string_view text) {
    std::string out;
    append_json_string(out, text);
    return out;
}

// What a JSON parser reads back from our text.
std::string round_trip(std::string_view text) { return nlohmann::json::parse(as_json(text)).get<std::string>(); }

TEST(JsonTextTest, PlainTextIsQuotedUnchanged) {
    EXPECT_EQ(as_json("api.example.com"), "\"api.example.com\"");
    EXPECT_EQ(as_json(""), "\"\"");
}

TEST(JsonTextTest, QuotesBackslashesAndControlCharactersAreEscaped) {
    EXPECT_EQ(as_json("a\"b\\c"), R"("a\"b\\c")");
    EXPECT_EQ(as_json("\n\r\t\b\f"), R"("\n\r\t\b\f")");
    EXPECT_EQ(as_json(std::string_view("\x01\x1f\0", 3)), R"("\u0001\u001f\u0000")");
    for (std::string s : {std::string("x\"y"), std::string("\\\\"), std::string("\x7f tail"), std::string(1, '\0')})
        EXPECT_EQ(round_trip(s), s);
}

TEST(JsonTextTest, ValidUtf8IsKept) {
    for (std::string s : {"caf\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x94\x91", "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF"}) {
        EXPECT_EQ(as_json(s), "\"" + s + "\"");
        EXPECT_EQ(round_trip(s), s);
    }
}

TEST(JsonTextTest, EveryInvalidByteBecomesTheReplacementCharacter) {
    const std::string fffd = "\xEF\xBF\xBD";
    struct Case {
        std::string in, out;
    } cases[] = {
        {"a\xFF"
         "b",
         "a" + fffd + "b"},                               // never valid
        {"\xC3", fffd},                                   // truncated
        {"\xC0\xAF", fffd + fffd},                        // overlong '/'
        {"\xE0\x80\xAF", fffd + fffd + fffd},             // overlong, 3 bytes
        {"\xED\xA0\x80", fffd + fffd + fffd},             // a UTF-16 surrogate
        {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
        {"\x80"
         "x",
         fffd + "x"},  // a stray continuation byte
    };
    for (const auto& c : cases) {
        EXPECT_EQ(as_json(c.in), "\"" + c.out + "\"");
        EXPECT_TRUE(nlohmann::json::accept(as_json(c.in)));
    }
}

TEST(JsonTextTest, AppendsToWhatIsThere) {
    std::string out = "{\"k\":";
    append_json_string(out, "v");
    EXPECT_EQ(out, "{\"k\":\"v\"");
}

}  // namespace
}  // namespace vaultgate
