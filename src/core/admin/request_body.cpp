// Request body checks. Credential values enter only through request bodies;
// no message here quotes any part of a body that failed a check.
#include "vaultgate/admin/request_body.hpp"

#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/json_wipe.hpp"

#include <algorithm>
#include <cstddef>

namespace vaultgate::admin {

namespace {

using nlohmann::json;

// Request bodies are a few levels deep at most (a session's inline policy);
// the cap keeps deeply nested input from costing recursion anywhere.
constexpr std::size_t max_body_depth = 16;

// The deepest nesting of arrays and objects, strings skipped. Runs before the
// parser so that a body of a million '[' is refused cheaply.
std::size_t nesting_depth(std::string_view text) {
    std::size_t depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

// A key is quoted back only when it looks like a misspelt field name, so that
// a pasted secret used as a key does not come back in the error.
std::string describe_unknown_key(std::string_view key) {
    bool plain = !key.empty() && key.size() <= 24;
    for (const char c : key) plain = plain && ((c >= 'a' && c <= 'z') || c == '_');
    return plain ? "unknown key '" + std::string(key) + "'" : std::string("an unknown key");
}

}  // namespace

ParsedBody::ParsedBody(const std::string& text) {
    if (nesting_depth(text) > max_body_depth) fail(400, "invalid_json", "the body is nested too deeply");
    JsonTextError error = JsonTextError::none;
    root_ = parse_json_text(text, &error);
    if (error == JsonTextError::invalid) fail(400, "invalid_json", "the body is not valid JSON");
    // The destructor does not run when the constructor throws.
    if (error == JsonTextError::duplicate_key) {
        wipe_json_strings(root_);
        fail(400, "duplicate_key", "an object in the body names the same key twice");
    }
    if (!root_.is_object()) {
        wipe_json_strings(root_);
        fail(400, "invalid_request", "the body must be a JSON object");
    }
}

ParsedBody::~ParsedBody() { wipe_json_strings(root_); }

void require_keys(const json& object, std::initializer_list<std::string_view> allowed) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
        fail(400, "invalid_request", describe_unknown_key(it.key()) + " (allowed: " + join_list(allowed) + ")");
    }
}

const json* optional_field(const json& object, std::string_view key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

const std::string& required_string(const json& object, std::string_view key) {
    const json* value = optional_field(object, key);
    if (!value) fail(400, "invalid_request", "missing required key '" + std::string(key) + "'");
    if (!value->is_string()) fail(400, "invalid_request", std::string(key) + ": expected a string");
    return value->get_ref<const std::string&>();
}

void check_name(std::string_view name, std::string_view kind) {
    if (auto why = validation::check_name(name, kind)) fail(400, "invalid_name", "name: " + *why);
}

void check_value(std::string_view value) {
    if (auto why = validation::check_credential_value(value)) fail(400, "invalid_value", "value: " + *why);
}

}  // namespace vaultgate::admin
