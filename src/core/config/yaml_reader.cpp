// The typed accessors of the config's YAML reader; loading the one document
// is in yaml_document.cpp.
#include "vaultgate/config/yaml_reader.hpp"

#include <limits>

namespace vaultgate::yaml {

std::string shown(std::string_view v) {
    constexpr std::size_t max_shown = 60;
    std::string out = "'";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i == max_shown) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(v[i]);
        out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    }
    out += "'";
    return out;
}

std::string with_value(const std::string& why, std::string_view v) {
    return v.empty() ? why : why + ", got " + shown(v);
}

std::string child(const std::string& path, std::string_view key) {
    if (path.empty()) return std::string(key);
    return path + "." + std::string(key);
}

std::string indexed(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

void Reader::fail(const YAML::Mark& m, const std::string& path, const std::string& what) const {
    std::string msg = source_ + ":";
    if (m.is_null()) {
        msg += "1:1: ";
    } else {
        msg += std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": ";
    }
    if (!path.empty()) msg += path + ": ";
    msg += what;
    throw ConfigError(msg);
}

namespace {

std::string kind_of(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Null:
            return "null";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Map:
            return "a map";
        case YAML::NodeType::Scalar:
            return "a string";
        default:
            return "nothing";
    }
}

// Plain scalars carry the non-specific tag "?"; quoted and block scalars carry
// "!". Booleans and integers must be plain, so `port: "443"` is a type error
// rather than a silent conversion.
bool is_plain(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "?"; }

}  // namespace

Value Value::with_path(std::string path) const {
    Value out = *this;
    out.path_ = std::move(path);
    return out;
}

std::string Value::key() const { return key_.IsDefined() && key_.IsScalar() ? key_.Scalar() : std::string(); }

std::string Value::kind() const { return kind_of(node_); }

std::string Value::described() const {
    if (node_.IsScalar()) return shown(node_.Scalar());
    return kind();
}

// A map entry's empty value gets its mark from the token after it, which
// yaml-cpp sets there, so such a value points at its key instead.
YAML::Mark Value::mark() const {
    const bool has_key = key_.IsDefined() && !key_.IsNull();
    if (has_key && (node_.IsNull() || node_.Mark().is_null())) return key_.Mark();
    return node_.Mark();
}

void Value::fail(const std::string& what) const { reader_->fail(mark(), path_, what); }

void Value::fail_at_key(const std::string& path, const std::string& what) const {
    reader_->fail(key_.Mark(), path, what);
}

std::string Value::string() const {
    if (!node_.IsScalar()) fail("expected a string, got " + kind());
    return node_.Scalar();
}

std::string Value::nonempty_string() const {
    auto s = string();
    if (s.empty()) fail("must not be empty");
    return s;
}

std::optional<std::string> Value::optional_path() const {
    if (node_.IsNull()) return std::nullopt;
    return nonempty_string();
}

bool Value::boolean() const {
    if (is_plain(node_)) {
        const auto& s = node_.Scalar();
        if (s == "true" || s == "True" || s == "TRUE") return true;
        if (s == "false" || s == "False" || s == "FALSE") return false;
    }
    fail("expected true or false, got " + described());
}

std::uint64_t Value::unsigned_integer(std::uint64_t min, std::uint64_t max) const {
    const std::string expected = "expected an integer, got " + described();
    if (!is_plain(node_)) fail(expected);
    const auto& s = node_.Scalar();
    // 18 digits always fit the 64-bit count, so the loop cannot overflow.
    if (s.empty() || s.size() > 18) fail(s.empty() ? expected : "value is too large");
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') fail(expected);
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (v < min || v > max) {
        if (min == 1 && max == std::numeric_limits<std::uint64_t>::max()) fail("must be greater than 0");
        fail("must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + s);
    }
    return v;
}

std::chrono::milliseconds Value::duration() const {
    if (node_.IsScalar()) {
        if (auto d = parse_duration(node_.Scalar())) {
            if (d->count() <= 0) fail("must be greater than 0");
            return *d;
        }
    }
    fail("expected a duration like 10s, 250ms, 2m or 1h, got " + described());
}

std::vector<Value> Value::list() const {
    if (node_.IsNull()) return {};
    if (!node_.IsSequence()) fail("expected a list, got " + kind());
    std::vector<Value> out;
    for (const auto& item : node_) out.emplace_back(*reader_, item, indexed(path_, out.size()));
    return out;
}

std::vector<Value> Value::entries() const {
    if (node_.IsNull()) return {};
    if (!node_.IsMap()) fail("expected a map, got " + kind());
    return entries_of_map();
}

// A repeated key is an error: yaml-cpp would silently keep one of them, and
// which one is a surprise either way.
std::vector<Value> Value::entries_of_map() const {
    std::vector<Value> out;
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : node_) {
        const YAML::Node& k = kv.first;
        if (!k.IsScalar()) reader_->fail(k.Mark(), path_, "keys must be strings, got " + kind_of(k));
        const std::string key = k.Scalar();
        auto [it, inserted] = seen.emplace(key, k.Mark());
        if (!inserted)
            reader_->fail(
                k.Mark(), path_,
                "duplicate key " + shown(key) + " (first at line " + std::to_string(it->second.line + 1) + ")");
        out.emplace_back(*reader_, k, kv.second, child(path_, key));
    }
    return out;
}

Fields Value::fields(std::span<const std::string_view> allowed) const {
    if (!node_.IsMap()) fail("expected a map, got " + kind());
    Fields out;
    for (auto& e : entries_of_map()) {
        const std::string key = e.key();
        bool known = false;
        for (auto a : allowed) known = known || a == key;
        if (!known) {
            std::string list;
            for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            e.fail_at_key(path_, "unknown key " + shown(key) + " (allowed: " + list + ")");
        }
        out.by_key_.emplace(key, std::move(e));
    }
    return out;
}

Fields Value::fields(std::initializer_list<std::string_view> allowed) const {
    return fields(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void Value::collect_positions(std::map<std::string, SourcePosition, std::less<>>& out) const {
    const YAML::Mark at = mark();
    // The root has no key to name; a key the file leaves out reads as 1:1.
    if (!path_.empty() && !at.is_null())
        out.emplace(path_,
                    SourcePosition{static_cast<std::size_t>(at.line) + 1, static_cast<std::size_t>(at.column) + 1});
    if (node_.IsMap()) {
        for (const auto& e : entries_of_map()) e.collect_positions(out);
    } else if (node_.IsSequence()) {
        for (const auto& item : list()) item.collect_positions(out);
    }
}

Fields Value::section(std::span<const std::string_view> allowed) const {
    if (node_.IsNull()) return {};
    return fields(allowed);
}

Fields Value::section(std::initializer_list<std::string_view> allowed) const {
    return section(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

}  // namespace vaultgate::yaml
