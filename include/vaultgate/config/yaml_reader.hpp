#pragma once
// A strict reader over yaml-cpp for the config file: exactly one document, no
// NUL byte, no repeated or unknown keys, and typed values that refuse the
// wrong type instead of converting it (`port: "443"` is not an integer).
// Every refusal is a ConfigError "file:line:col: key.path: what is wrong";
// values that could be a credential are never quoted back. The schema lives in
// the section readers (src/core/config/config_*.cpp); this knows only YAML.
#include "vaultgate/config/config.hpp"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate::yaml {

// A value quoted for a message: at most 60 characters, control bytes as '?',
// so a pasted blob or a terminal escape cannot flood or corrupt the output.
std::string shown(std::string_view v);

// A rule's message (which never quotes the value) with the value added, for
// values that are safe to show and help find the mistake.
std::string with_value(const std::string& why, std::string_view v);

// "a.b" from "a" and "b"; just "b" at the top level.
std::string child(const std::string& path, std::string_view key);
// "a[3]".
std::string indexed(const std::string& path, std::size_t i);

class Value;
class Fields;

// Reads one config text; `source` names it in every message.
class Reader {
public:
    explicit Reader(std::string source) : source_(std::move(source)) {}

    const std::string& source() const { return source_; }

    // The root of the one document in `text`. Refuses a second document, a
    // NUL byte anywhere, and YAML syntax errors, each with its place. The root
    // may be null (an empty file): the schema decides what that means.
    Value load(const std::string& text) const;

    // Runs a schema function over loaded values. A yaml-cpp exception that
    // escapes it (not expected: every accessor checks the type first) becomes
    // a ConfigError too, so a caller only ever sees ConfigError.
    template <class F>
    decltype(auto) guard(F&& f) const {
        try {
            return std::forward<F>(f)();
        } catch (const YAML::Exception& e) {
            fail(e.mark, "", "cannot read YAML: " + e.msg);
        }
    }

    // "source:line:col: path: what"; an unknown place reads as 1:1.
    [[noreturn]] void fail(const YAML::Mark& at, const std::string& path, const std::string& what) const;

private:
    std::string source_;
};

// One node of the document with its key path ("vaults[0].services[1].host")
// and, for a map entry, its key. Copies are cheap (yaml-cpp nodes share).
class Value {
public:
    Value(const Reader& reader, YAML::Node node, std::string path)
        : reader_(&reader), node_(std::move(node)), path_(std::move(path)) {}
    Value(const Reader& reader, YAML::Node key, YAML::Node node, std::string path)
        : reader_(&reader), key_(std::move(key)), node_(std::move(node)), path_(std::move(path)) {}

    const std::string& path() const { return path_; }
    // The same node under another path, for messages.
    Value with_path(std::string path) const;

    // The key of a map entry; empty for a list item or the root.
    std::string key() const;

    bool is_null() const { return node_.IsNull(); }
    bool is_scalar() const { return node_.IsScalar(); }
    bool is_map() const { return node_.IsMap(); }
    bool is_list() const { return node_.IsSequence(); }
    // The text of a scalar; only after is_scalar().
    const std::string& scalar() const { return node_.Scalar(); }

    // "null", "a list", "a map" or "a string", never the value: for places
    // where the value might be a secret pasted in by mistake.
    std::string kind() const;
    // The kind, and for a scalar its shortened value.
    std::string described() const;

    // Refusals at this value (a map entry with an empty value: at its key),
    // naming this value's path.
    [[noreturn]] void fail(const std::string& what) const;
    // Refusals at this entry's key, naming `path` (the map's path for a key
    // that is not allowed there, the entry's own for a key that is wrong).
    [[noreturn]] void fail_at_key(const std::string& path, const std::string& what) const;

    // --- typed values; each refuses anything else with a message --------------
    std::string string() const;
    std::string nonempty_string() const;
    // A file path that may be left empty (null): nullopt then.
    std::optional<std::string> optional_path() const;
    // true/True/TRUE or false/False/FALSE, unquoted.
    bool boolean() const;
    // Unquoted decimal digits within [min, max]; at most 18 digits.
    std::uint64_t unsigned_integer(std::uint64_t min, std::uint64_t max) const;
    // A duration like 10s, 250ms, 2m or 1h, greater than 0.
    std::chrono::milliseconds duration() const;

    // --- collections --------------------------------------------------------------
    // A list's items with indexed paths; null counts as empty.
    std::vector<Value> list() const;
    // A map's entries in file order, each with path "<this path>.<key>"; keys
    // must be strings and unique. Null counts as empty.
    std::vector<Value> entries() const;
    // A map with only the `allowed` keys, by key; null counts as empty (an
    // empty section is the same as an absent one).
    Fields section(std::span<const std::string_view> allowed) const;
    Fields section(std::initializer_list<std::string_view> allowed) const;
    // The same, but the value must be a map: null is refused.
    Fields fields(std::span<const std::string_view> allowed) const;
    Fields fields(std::initializer_list<std::string_view> allowed) const;

    // Every key path at and under this value with the place of its value, for
    // a document the schema has accepted (unique string keys).
    void collect_positions(std::map<std::string, SourcePosition, std::less<>>& out) const;

private:
    YAML::Mark mark() const;
    std::vector<Value> entries_of_map() const;

    const Reader* reader_;
    YAML::Node key_;  // undefined for a list item or the root
    YAML::Node node_;
    std::string path_;
};

// The entries of a map section, looked up by key.
class Fields {
public:
    const Value* find(std::string_view key) const {
        auto it = by_key_.find(key);
        return it == by_key_.end() ? nullptr : &it->second;
    }
    // Only for a key known to be there; std::out_of_range otherwise.
    const Value& at(std::string_view key) const {
        auto it = by_key_.find(key);
        if (it == by_key_.end()) throw std::out_of_range("no key " + std::string(key));
        return it->second;
    }
    auto begin() const { return by_key_.begin(); }
    auto end() const { return by_key_.end(); }

private:
    friend class Value;
    std::map<std::string, Value, std::less<>> by_key_;
};

}  // namespace vaultgate::yaml
