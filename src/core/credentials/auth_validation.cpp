// The auth object of a service, for every auth type: which keys each type
// reads, which it needs, and the form of each value. No message quotes a
// value (see validation.hpp).
#include "vaultgate/credentials/validation.hpp"

#include <algorithm>

namespace vaultgate::validation {

namespace {

constexpr std::string_view auth_type_choices =
    "api-key, bearer, basic, header, query, aws-sigv4, oauth2-client-credentials, github-app, jwt-bearer";

constexpr std::array<std::string_view, 7> credential_keys = {
    "key", "access_key_id", "secret_access_key", "session_token", "client_id", "client_secret", "private_key"};

// The keys each type reads besides "type": required first, then optional.
struct TypeKeys {
    std::vector<std::string_view> required;
    std::vector<std::string_view> optional;
};

TypeKeys keys_of(AuthType type) {
    switch (type) {
        case AuthType::api_key:
            return {{"key"}, {"header"}};
        case AuthType::bearer:
            return {{"key"}, {}};
        case AuthType::basic:
            return {{"key", "user"}, {}};
        case AuthType::header:
            return {{"key", "header", "template"}, {}};
        case AuthType::query:
            return {{"key", "param"}, {}};
        case AuthType::aws_sigv4:
            return {{"access_key_id", "secret_access_key"}, {"session_token", "region", "service"}};
        case AuthType::oauth2_client_credentials:
            return {{"token_url", "client_id", "client_secret"}, {"scope", "audience", "client_auth"}};
        case AuthType::github_app:
            return {{"app_id", "installation_id", "private_key"}, {"api_url", "scheme"}};
        case AuthType::jwt_bearer:
            return {{"key", "scopes"}, {"token_url"}};
    }
    return {};
}

std::string_view required_why(std::string_view key) {
    if (key == "key") return "(the credential to inject)";
    return "";
}

// An AWS region or service name: lower-case letters, digits and '-'.
std::optional<std::string> check_aws_label(std::string_view v) {
    if (v.empty() || v.size() > 64) return "expected 1 to 64 characters";
    for (char c : v)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return "expected lower-case letters, digits and '-'";
    return std::nullopt;
}

// A token endpoint: vaultgate only fetches tokens over verified TLS.
std::optional<std::string> check_https_url(std::string_view v) {
    constexpr std::string_view scheme = "https://";
    if (v.size() > 2048) return "expected at most 2048 characters";
    if (v.substr(0, scheme.size()) != scheme) return "expected an https:// URL";
    const auto rest = v.substr(scheme.size());
    if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#')
        return "expected a host after https://";
    for (unsigned char c : v)
        if (c <= 0x20 || c >= 0x7f) return "expected a URL without spaces or control characters";
    if (rest.find('@') != std::string_view::npos) return "expected a URL without user information";
    if (rest.find('#') != std::string_view::npos) return "expected a URL without a fragment";
    return std::nullopt;
}

// app_id and installation_id: GitHub's numeric ids.
std::optional<std::string> check_numeric_id(std::string_view v) {
    if (v.empty() || v.size() > 20) return "expected a number of 1 to 20 digits";
    for (char c : v)
        if (c < '0' || c > '9') return "expected a number of 1 to 20 digits";
    return std::nullopt;
}

// scope, audience and each of scopes go into a form field: printable text.
std::optional<std::string> check_printable(std::string_view v, std::size_t max) {
    if (v.size() > max) return "expected at most " + std::to_string(max) + " characters";
    for (unsigned char c : v)
        if (c < 0x20 || c == 0x7f) return "expected printable text";
    return std::nullopt;
}

std::optional<std::string> check_text(std::string_view key, std::string_view v) {
    if (names_credential(key)) return check_name(v, "credential");
    if (key == "header") return check_header_name(v);
    if (key == "template") return check_header_template(v);
    if (key == "user") return check_basic_user(v);
    if (key == "param") return check_query_param(v);
    if (key == "region" || key == "service") return check_aws_label(v);
    if (key == "token_url" || key == "api_url") return check_https_url(v);
    if (key == "app_id" || key == "installation_id") return check_numeric_id(v);
    if (key == "scope" || key == "audience") return check_printable(v, 1024);
    if (key == "client_auth")
        return v == "basic" || v == "post" ? std::nullopt : std::optional<std::string>("expected basic or post");
    if (key == "scheme")
        return v == "bearer" || v == "basic" ? std::nullopt : std::optional<std::string>("expected bearer or basic");
    return std::nullopt;
}

void store(AuthSpec& spec, std::string_view key, const AuthValue& v) {
    const std::string& t = v.text;
    if (key == "key") spec.key = t;
    if (key == "header") spec.header = t;
    if (key == "template") spec.value_template = t;
    if (key == "user") spec.user = t;
    if (key == "param") spec.param = t;
    if (key == "access_key_id") spec.access_key_id = t;
    if (key == "secret_access_key") spec.secret_access_key = t;
    if (key == "session_token") spec.session_token = t;
    if (key == "region") spec.region = t;
    if (key == "service") spec.service = t;
    if (key == "token_url") spec.token_url = t;
    if (key == "client_id") spec.client_id = t;
    if (key == "client_secret") spec.client_secret = t;
    if (key == "scope") spec.scope = t;
    if (key == "audience") spec.audience = t;
    if (key == "client_auth") spec.client_auth = t == "post" ? ClientAuth::post : ClientAuth::basic;
    if (key == "app_id") spec.app_id = t;
    if (key == "installation_id") spec.installation_id = t;
    if (key == "private_key") spec.private_key = t;
    if (key == "api_url") spec.api_url = t;
    if (key == "scheme") spec.scheme = t == "basic" ? TokenScheme::basic : TokenScheme::bearer;
    if (key == "scopes") spec.scopes = v.list;
}

bool contains(const std::vector<std::string_view>& keys, std::string_view key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

bool names_credential(std::string_view auth_key) {
    return std::find(credential_keys.begin(), credential_keys.end(), auth_key) != credential_keys.end();
}

std::optional<AuthType> parse_auth_type(std::string_view name) {
    for (AuthType t :
         {AuthType::api_key, AuthType::bearer, AuthType::basic, AuthType::header, AuthType::query, AuthType::aws_sigv4,
          AuthType::oauth2_client_credentials, AuthType::github_app, AuthType::jwt_bearer})
        if (auth_type_name(t) == name) return t;
    return std::nullopt;
}

std::optional<FieldError> build_auth_spec(const AuthFields& fields, AuthSpec* out) {
    auto missing = [](std::string_view key, std::string_view why) {
        std::string message = "missing required key '" + std::string(key) + "'";
        if (!why.empty()) message += " " + std::string(why);
        return FieldError{"", std::move(message), false};
    };

    const auto type_it = fields.find("type");
    if (type_it == fields.end()) return missing("type", "(one of " + std::string(auth_type_choices) + ")");
    if (type_it->second.is_list) return FieldError{"type", "expected a string, got a list", false};
    const std::string& type_name = type_it->second.text;
    const auto type = parse_auth_type(type_name);
    if (!type) return FieldError{"type", "expected one of " + std::string(auth_type_choices), false};

    // A key the type ignores is almost always a mistake in `type`; refusing
    // it beats injecting something other than what the operator had in mind.
    const TypeKeys keys = keys_of(*type);
    for (const auto& [key, _] : fields) {
        if (key == "type" || contains(keys.required, key) || contains(keys.optional, key)) continue;
        return FieldError{key, "not used by auth type " + type_name, true};
    }
    for (auto key : keys.required)
        if (!fields.count(key)) {
            std::string why(required_why(key));
            if (why.empty()) why = "for auth type " + type_name;
            return missing(key, why);
        }

    AuthSpec spec;
    spec.type = *type;
    for (const auto& [key, value] : fields) {
        if (key == "type") continue;
        if (key == "scopes") {
            if (!value.is_list) return FieldError{key, "expected a list of scopes", false};
            if (value.list.empty()) return FieldError{key, "expected at least one scope", false};
            for (const auto& scope : value.list) {
                if (scope.empty() || scope.find(' ') != std::string::npos)
                    return FieldError{key, "expected scopes without spaces, none empty", false};
                if (auto why = check_printable(scope, 1024)) return FieldError{key, *why, false};
            }
        } else {
            if (value.is_list) return FieldError{key, "expected a string, got a list", false};
            if (auto why = check_text(key, value.text)) return FieldError{key, *why, false};
        }
        store(spec, key, value);
    }
    *out = std::move(spec);
    return std::nullopt;
}

}  // namespace vaultgate::validation
