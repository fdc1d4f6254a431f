#pragma once
// Checks on admin request bodies. Every refusal is an ApiError whose message is
// fixed text or a name that passed validation, never a piece of the body.
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace vaultgate::admin {

// A parsed JSON object body that wipes its strings when it goes out of scope,
// whichever way the handler leaves. The parser's own scratch buffer is beyond
// reach; the caller wipes the request's body string. Refuses (400) a body
// nested too deeply, not JSON, naming a key twice, or not an object.
class ParsedBody {
public:
    explicit ParsedBody(const std::string& text);
    ~ParsedBody();
    ParsedBody(const ParsedBody&) = delete;
    ParsedBody& operator=(const ParsedBody&) = delete;

    const nlohmann::json& root() const { return root_; }

private:
    nlohmann::json root_;
};

// Refuses a key not in `allowed`.
void require_keys(const nlohmann::json& object, std::initializer_list<std::string_view> allowed);

// A key whose value is null counts as absent.
const nlohmann::json* optional_field(const nlohmann::json& object, std::string_view key);

const std::string& required_string(const nlohmann::json& object, std::string_view key);

// Names follow the config file's rule (validation::check_name), so a vault or
// credential can move between the two.
void check_name(std::string_view name, std::string_view kind);

// The rule the config loader and the bootstrapper apply too.
void check_value(std::string_view value);

}  // namespace vaultgate::admin
