// The config's YAML reader on its own, without the config schema.
#include "vaultgate/config/yaml_reader.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

namespace vaultgate::yaml {
namespace {

using namespace std::chrono_literals;

// The ConfigError message of `f`, or "" when it did not throw one.
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

class YamlReaderTest : public ::testing::Test {
protected:
    const Reader reader{"r.yaml"};

    // The value under top-level `key` of `text`.
    Value at(const std::string& text, std::string_view key) const {
        const auto root = reader.load(text);
        const auto f = root.fields({key});
        const Value* v = f.find(key);
        if (!v) throw std::runtime_error("no key " + std::string(key));
        return *v;
    }

    // The message of reading `text`'s `key` through `read`.
    std::string refusal(const std::string& text, std::string_view key, const std::function<void(const Value&)>& read) {
        return error_of([&] { read(at(text, key)); });
    }
};

TEST_F(YamlReaderTest, ErrorsNameFileLineColumnAndPath) {
    const std::string text = "a:\n  b:\n    - 1\n    - [x]\n";
    const auto msg = error_of([&] {
        const auto items = at(text, "a").section({"b"}).at("b").list();
        ASSERT_EQ(items.size(), 2u);
        EXPECT_EQ(items[0].path(), "a.b[0]");
        EXPECT_EQ(items[0].string(), "1");
        items[1].string();
    });
    EXPECT_EQ(msg, "r.yaml:4:7: a.b[1]: expected a string, got a list");
}

TEST_F(YamlReaderTest, AnEmptyValuePointsAtItsKey) {
    // yaml-cpp gives an empty value the place of the token after it.
    EXPECT_EQ(refusal("a:\n  b:\n  c: 1\n", "a",
                      [](const Value& v) {
                          v.section({"b", "c"}).at("b").string();
                      }),
              "r.yaml:2:3: a.b: expected a string, got null");
}

TEST_F(YamlReaderTest, TypedValuesRefuseOtherTypes) {
    const auto bool_of = [](const Value& v) { v.boolean(); };
    EXPECT_EQ(refusal("k: yes\n", "k", bool_of), "r.yaml:1:4: k: expected true or false, got 'yes'");
    // Quoted, a boolean or an integer is a string, not a conversion.
    EXPECT_EQ(refusal("k: \"true\"\n", "k", bool_of), "r.yaml:1:4: k: expected true or false, got 'true'");
    EXPECT_TRUE(at("k: True\n", "k").boolean());
    EXPECT_FALSE(at("k: FALSE\n", "k").boolean());

    const auto any = std::numeric_limits<std::uint64_t>::max();
    const auto uint_of = [&](std::uint64_t min, std::uint64_t max) {
        return [=](const Value& v) { v.unsigned_integer(min, max); };
    };
    EXPECT_EQ(refusal("k: \"443\"\n", "k", uint_of(0, any)), "r.yaml:1:4: k: expected an integer, got '443'");
    EXPECT_EQ(refusal("k: -1\n", "k", uint_of(0, any)), "r.yaml:1:4: k: expected an integer, got '-1'");
    EXPECT_EQ(refusal("k: [1]\n", "k", uint_of(0, any)), "r.yaml:1:4: k: expected an integer, got a list");
    EXPECT_EQ(refusal("k: 1234567890123456789\n", "k", uint_of(0, any)), "r.yaml:1:4: k: value is too large");
    EXPECT_EQ(refusal("k: 0\n", "k", uint_of(1, any)), "r.yaml:1:4: k: must be greater than 0");
    EXPECT_EQ(refusal("k: 257\n", "k", uint_of(0, 256)), "r.yaml:1:4: k: must be between 0 and 256, got 257");
    EXPECT_EQ(at("k: 256\n", "k").unsigned_integer(0, 256), 256u);

    const auto duration_of = [](const Value& v) { v.duration(); };
    EXPECT_EQ(refusal("k: 10\n", "k", duration_of),
              "r.yaml:1:4: k: expected a duration like 10s, 250ms, 2m or 1h, got '10'");
    EXPECT_EQ(refusal("k: 0ms\n", "k", duration_of), "r.yaml:1:4: k: must be greater than 0");
    EXPECT_EQ(at("k: 250ms\n", "k").duration(), 250ms);

    EXPECT_EQ(refusal("k: {a: 1}\n", "k", [](const Value& v) { v.string(); }),
              "r.yaml:1:4: k: expected a string, got a map");
    EXPECT_EQ(refusal("k: \"\"\n", "k", [](const Value& v) { v.nonempty_string(); }),
              "r.yaml:1:4: k: must not be empty");
    EXPECT_EQ(at("k:\n", "k").optional_path(), std::nullopt);
    EXPECT_EQ(at("k: /run/x\n", "k").optional_path(), std::optional<std::string>("/run/x"));
}

TEST_F(YamlReaderTest, CollectionsRefuseOtherTypesAndTakeNullAsEmpty) {
    EXPECT_EQ(refusal("k: {}\n", "k", [](const Value& v) { v.list(); }), "r.yaml:1:4: k: expected a list, got a map");
    EXPECT_EQ(refusal("k: [a]\n", "k", [](const Value& v) { v.entries(); }),
              "r.yaml:1:4: k: expected a map, got a list");
    EXPECT_EQ(refusal("k: x\n", "k", [](const Value& v) { v.section({"a"}); }),
              "r.yaml:1:4: k: expected a map, got a string");
    // fields() wants a map even where section() would take null as empty.
    EXPECT_EQ(refusal("k:\n", "k", [](const Value& v) { v.fields({"a"}); }), "r.yaml:1:1: k: expected a map, got null");
    EXPECT_TRUE(at("k:\n", "k").list().empty());
    EXPECT_TRUE(at("k: ~\n", "k").entries().empty());
    EXPECT_EQ(at("k:\n", "k").section({"a"}).find("a"), nullptr);
}

TEST_F(YamlReaderTest, EntriesKeepFileOrderAndTheirPaths) {
    const auto entries = at("k:\n  z: 1\n  a: 2\n  m: 3\n", "k").entries();
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[0].key(), "z");
    EXPECT_EQ(entries[1].key(), "a");
    EXPECT_EQ(entries[2].key(), "m");
    EXPECT_EQ(entries[2].path(), "k.m");
    EXPECT_EQ(entries[2].scalar(), "3");
    // A message about an entry's key points at the key, under the path given.
    EXPECT_EQ(error_of([&] { entries[1].fail_at_key("k", "bad name"); }), "r.yaml:3:3: k: bad name");
    EXPECT_EQ(error_of([&] { entries[1].with_path("k.other").fail("bad value"); }), "r.yaml:3:6: k.other: bad value");
}

TEST_F(YamlReaderTest, UnknownKeysAreRefusedWithTheAllowedOnes) {
    EXPECT_EQ(refusal("k:\n  a: 1\n  bee: 2\n", "k",
                      [](const Value& v) {
                          v.section({"a", "b"});
                      }),
              "r.yaml:3:3: k: unknown key 'bee' (allowed: a, b)");
    EXPECT_EQ(error_of([&] { reader.load("a: 1\nb: 2\n").fields({"a"}); }), "r.yaml:2:1: unknown key 'b' (allowed: a)");
}

TEST_F(YamlReaderTest, RepeatedAndNonStringKeysAreRefused) {
    EXPECT_EQ(refusal("k:\n  a: 1\n  b: 2\n  a: 3\n", "k", [](const Value& v) { v.entries(); }),
              "r.yaml:4:3: k: duplicate key 'a' (first at line 2)");
    EXPECT_EQ(refusal("k:\n  a: 1\n  a: 3\n", "k", [](const Value& v) { v.section({"a"}); }),
              "r.yaml:3:3: k: duplicate key 'a' (first at line 2)");
    EXPECT_EQ(refusal("k:\n  [a]: 1\n", "k", [](const Value& v) { v.entries(); }),
              "r.yaml:2:3: k: keys must be strings, got a list");
}

TEST_F(YamlReaderTest, ExactlyOneDocument) {
    EXPECT_EQ(error_of([&] { reader.load("a: 1\n---\nb: 2\n"); }), "r.yaml:2:1: only one YAML document is allowed");
    EXPECT_EQ(error_of([&] { reader.load("a: 1\n---\n"); }), "r.yaml:2:1: only one YAML document is allowed");
    EXPECT_EQ(error_of([&] { reader.load("---\na: 1\n...\n"); }), "");
    // An empty text is one null document; what that means is the schema's call.
    EXPECT_TRUE(reader.load("# nothing\n").is_null());
}

TEST_F(YamlReaderTest, SyntaxErrorsAndNulBytesCarryTheirPlace) {
    const auto bad_indent = error_of([&] { reader.load("a:\n  b: 1\n c: 2\n"); });
    EXPECT_EQ(bad_indent.rfind("r.yaml:3:2: YAML syntax error: ", 0), 0u) << bad_indent;
    EXPECT_EQ(error_of([&] { reader.load(",\n"); }), "r.yaml:1:1: YAML syntax error: unexpected character ','");
    EXPECT_EQ(error_of([&] { reader.load(std::string("a: 1\nb: x\0y\n", 11)); }),
              "r.yaml:2:5: the file holds a NUL byte; no setting may contain one");
    const auto escaped = error_of([&] { reader.load("a: 1\nb: \"x\\0y\"\n"); });
    EXPECT_EQ(escaped.rfind("r.yaml:2:4: a key or value holds a NUL byte", 0), 0u) << escaped;
}

TEST_F(YamlReaderTest, GuardTurnsStrayYamlExceptionsIntoConfigErrors) {
    YAML::Mark m;
    m.line = 4;
    m.column = 2;
    EXPECT_EQ(error_of([&] { reader.guard([&]() -> int { throw YAML::Exception(m, "boom"); }); }),
              "r.yaml:5:3: cannot read YAML: boom");
    EXPECT_EQ(reader.guard([] { return 7; }), 7);
}

TEST(YamlShownTest, QuotesShortensAndHidesControlBytes) {
    EXPECT_EQ(shown("abc"), "'abc'");
    EXPECT_EQ(shown("a\x1b[2Jb\x7f"), "'a?[2Jb?'");
    EXPECT_EQ(shown(std::string(61, 'x')), "'" + std::string(60, 'x') + "...'");
    EXPECT_EQ(with_value("bad", ""), "bad");
    EXPECT_EQ(with_value("bad", "v"), "bad, got 'v'");
    EXPECT_EQ(child("", "a"), "a");
    EXPECT_EQ(child("a", "b"), "a.b");
    EXPECT_EQ(indexed("a", 3), "a[3]");
}

}  // namespace
}  // namespace vaultgate::yaml
