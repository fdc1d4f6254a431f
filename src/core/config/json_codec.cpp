// JSON <-> ServiceConfig and EgressPolicy, for admin API bodies and the store.
// The rules are the config loader's, from validation.hpp; this file only reads
// JSON and names the field at fault. Values are never quoted in an error: admin
// API bodies may hold a secret in a field where a name was expected, and errors
// travel to responses and logs.
#include "vaultgate/config/json_codec.hpp"

#include "vaultgate/credentials/validation.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <span>
#include <vector>

namespace vaultgate {

namespace {

using nlohmann::json;

// Thrown inside the decoder and turned into the `error` out-parameter at the
// entry points, so that each check is one line rather than a return chain.
struct DecodeError {
    std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw DecodeError{path.empty() ? what : path + ": " + what};
}

std::string child(const std::string& path, std::string_view key) {
    if (path.empty()) return std::string(key);
    return path + "." + std::string(key);
}

std::string indexed(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string kind_of(const json& j) {
    switch (j.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::object:
            return "an object";
        case json::value_t::array:
            return "a list";
        case json::value_t::string:
            return "a string";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "an integer";
        case json::value_t::number_float:
            return "a number";
        default:
            return "a value";
    }
}

// A key name is quoted back only when it looks like a misspelt field name
// (short, lower-case letters and '_'), so that a pasted secret used as a key,
// which nearly always has digits or capitals, does not come back in the error.
std::string key_for_message(std::string_view key) {
    constexpr std::size_t max_shown = 24;
    bool plain = !key.empty() && key.size() <= max_shown;
    for (char c : key) plain = plain && ((c >= 'a' && c <= 'z') || c == '_' || c == '-');
    return plain ? "unknown key '" + std::string(key) + "'" : std::string("an unknown key");
}

void require_object(const json& j, const std::string& path, std::span<const std::string_view> allowed) {
    if (!j.is_object()) fail(path, "expected an object, got " + kind_of(j));
    for (const auto& [key, _] : j.items()) {
        bool known = false;
        for (auto a : allowed) known = known || a == key;
        if (!known) {
            std::string list;
            for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            fail(path, key_for_message(key) + " (allowed: " + list + ")");
        }
    }
}

// A present key whose value is null counts as absent, as in the config file.
const json* field(const json& object, std::string_view key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
}

std::string string_value(const json& j, const std::string& path) {
    if (!j.is_string()) fail(path, "expected a string, got " + kind_of(j));
    return j.get<std::string>();
}

bool bool_value(const json& j, const std::string& path) {
    if (!j.is_boolean()) fail(path, "expected true or false, got " + kind_of(j));
    return j.get<bool>();
}

std::uint16_t port_value(const json& j, const std::string& path) {
    // 443.0 is refused with the floats: a port is an integer in the config too.
    // Parsed text gives unsigned numbers, values built in code signed ones.
    if (!j.is_number_integer()) fail(path, "expected an integer, got " + kind_of(j));
    const std::int64_t v =
        j.is_number_unsigned() ? (j.get<std::uint64_t>() > 65535 ? 0 : j.get<std::int64_t>()) : j.get<std::int64_t>();
    if (auto why = validation::check_service_port(v)) fail(path, *why);
    return static_cast<std::uint16_t>(v);
}

std::string service_host(const json& j, const std::string& path) {
    std::string host;
    if (auto why = validation::check_service_host(string_value(j, path), &host)) fail(path, *why);
    return host;
}

AuthSpec decode_auth(const json& j, const std::string& path) {
    require_object(j, path, validation::auth_keys);
    validation::AuthFields given;
    for (const auto& [key, value] : j.items()) {
        if (value.is_null()) continue;
        validation::AuthValue v;
        if (value.is_array()) {
            v.is_list = true;
            for (std::size_t i = 0; i < value.size(); ++i)
                v.list.push_back(string_value(value[i], child(path, key) + "[" + std::to_string(i) + "]"));
        } else {
            v.text = string_value(value, child(path, key));
        }
        given.emplace(key, std::move(v));
    }
    AuthSpec spec;
    if (auto err = validation::build_auth_spec(given, &spec))
        fail(err->field.empty() ? path : child(path, err->field), err->message);
    return spec;
}

ServiceConfig decode_service(const json& j) {
    // The config file's service keys, but for "auth_config" where it has "auth".
    static constexpr std::array<std::string_view, 5> keys = {"host", "port", "path_prefix", "auth_config",
                                                             "redact_response"};
    require_object(j, "", keys);
    ServiceConfig svc;
    const auto* host = field(j, "host");
    if (!host) fail("", "missing required key 'host'");
    svc.host = service_host(*host, "host");
    if (const auto* p = field(j, "port")) svc.port = port_value(*p, "port");
    if (const auto* p = field(j, "path_prefix")) {
        svc.path_prefix = string_value(*p, "path_prefix");
        if (auto why = validation::check_path_prefix(svc.path_prefix)) fail("path_prefix", *why);
    }
    const auto* auth = field(j, "auth_config");
    if (!auth) fail("", "missing required key 'auth_config'");
    svc.auth = decode_auth(*auth, "auth_config");
    if (const auto* p = field(j, "redact_response")) svc.redact_response = bool_value(*p, "redact_response");
    return svc;
}

const json& list_value(const json& j, const std::string& path) {
    if (!j.is_array()) fail(path, "expected a list, got " + kind_of(j));
    return j;
}

EgressPolicy decode_policy(const json& j) {
    require_object(j, "", validation::policy_keys);
    EgressPolicy policy;
    if (const auto* x = field(j, "allow_https")) policy.allow_https = bool_value(*x, "allow_https");
    if (const auto* x = field(j, "allow_http")) policy.allow_http = bool_value(*x, "allow_http");
    if (const auto* x = field(j, "allow_package_managers"))
        policy.allow_package_managers = bool_value(*x, "allow_package_managers");
    if (const auto* x = field(j, "tunnel_sni_check")) policy.tunnel_sni_check = bool_value(*x, "tunnel_sni_check");
    if (const auto* x = field(j, "allowed_domains")) {
        const auto& items = list_value(*x, "allowed_domains");
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto path = indexed("allowed_domains", i);
            const auto text = string_value(items[i], path);
            std::string why;
            auto rule = DomainRule::parse(text, &why);
            // DomainRule::parse explains without quoting the text.
            if (!rule) fail(path, "invalid domain rule" + (why.empty() ? std::string() : ": " + why));
            policy.allowed_domains.push_back(std::move(*rule));
        }
    }
    if (const auto* x = field(j, "allowed_cidrs")) {
        const auto& items = list_value(*x, "allowed_cidrs");
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto path = indexed("allowed_cidrs", i);
            auto cidr = parse_cidr(string_value(items[i], path));
            if (!cidr) fail(path, "expected an IP address or CIDR like 10.0.0.0/8 or fd00::/8");
            policy.allowed_cidrs.push_back(*cidr);
        }
    }
    return policy;
}

template <class T, class Decode>
std::optional<T> decode_or_error(const json& j, std::string* error, Decode decode) {
    try {
        return decode(j);
    } catch (const DecodeError& e) {
        if (error) *error = e.message;
        return std::nullopt;
    }
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, JsonTextError* error) {
    // The parser keeps one member per key, the last; an object that received
    // more key events than it has members named one of them twice. Counting
    // keeps no copy of a key.
    std::vector<std::size_t> keys_seen;  // one count per open object, innermost last
    bool duplicate = false;
    const json::parser_callback_t count_keys = [&](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) {
            keys_seen.push_back(0);
        } else if (event == json::parse_event_t::key && !keys_seen.empty()) {
            ++keys_seen.back();
        } else if (event == json::parse_event_t::object_end && !keys_seen.empty()) {
            duplicate = duplicate || keys_seen.back() != parsed.size();
            keys_seen.pop_back();
        }
        return true;
    };
    json root = json::parse(text, count_keys, false);
    *error = root.is_discarded() ? JsonTextError::invalid
             : duplicate         ? JsonTextError::duplicate_key
                                 : JsonTextError::none;
    return root;
}

std::string domain_rule_text(const DomainRule& rule) {
    std::string out = rule.wildcard ? "*." + rule.host : rule.host;
    if (rule.port) out += ":" + std::to_string(*rule.port);
    return out;
}

std::string cidr_text(const Cidr& cidr) { return cidr.base.to_string() + "/" + std::to_string(cidr.prefix_len); }

nlohmann::json service_to_json(const ServiceConfig& service) {
    json auth = json::object();
    const AuthSpec& a = service.auth;
    auth["type"] = auth_type_name(a.type);
    switch (a.type) {
        case AuthType::api_key:
            auth["key"] = a.key;
            auth["header"] = a.header;
            break;
        case AuthType::bearer:
            auth["key"] = a.key;
            break;
        case AuthType::basic:
            auth["key"] = a.key;
            auth["user"] = a.user;
            break;
        case AuthType::header:
            auth["key"] = a.key;
            auth["header"] = a.header;
            auth["template"] = a.value_template;
            break;
        case AuthType::query:
            auth["key"] = a.key;
            auth["param"] = a.param;
            break;
        case AuthType::aws_sigv4:
            auth["access_key_id"] = a.access_key_id;
            auth["secret_access_key"] = a.secret_access_key;
            if (!a.session_token.empty()) auth["session_token"] = a.session_token;
            if (!a.region.empty()) auth["region"] = a.region;
            if (!a.service.empty()) auth["service"] = a.service;
            break;
        case AuthType::oauth2_client_credentials:
            auth["token_url"] = a.token_url;
            auth["client_id"] = a.client_id;
            auth["client_secret"] = a.client_secret;
            if (!a.scope.empty()) auth["scope"] = a.scope;
            if (!a.audience.empty()) auth["audience"] = a.audience;
            auth["client_auth"] = a.client_auth == ClientAuth::post ? "post" : "basic";
            break;
        case AuthType::github_app:
            auth["app_id"] = a.app_id;
            auth["installation_id"] = a.installation_id;
            auth["private_key"] = a.private_key;
            auth["api_url"] = a.api_url;
            auth["scheme"] = a.scheme == TokenScheme::basic ? "basic" : "bearer";
            break;
        case AuthType::jwt_bearer:
            auth["key"] = a.key;
            auth["scopes"] = a.scopes;
            if (!a.token_url.empty()) auth["token_url"] = a.token_url;
            break;
    }
    json j = json::object();
    j["host"] = service.host;
    j["port"] = service.port;
    j["path_prefix"] = service.path_prefix;
    j["auth_config"] = std::move(auth);
    j["redact_response"] = service.redact_response;
    return j;
}

std::optional<ServiceConfig> service_from_json(const nlohmann::json& j, std::string* error) {
    return decode_or_error<ServiceConfig>(j, error, decode_service);
}

nlohmann::json policy_to_json(const EgressPolicy& policy) {
    json domains = json::array();
    for (const auto& rule : policy.allowed_domains) domains.push_back(domain_rule_text(rule));
    json cidrs = json::array();
    for (const auto& cidr : policy.allowed_cidrs) cidrs.push_back(cidr_text(cidr));
    json j = json::object();
    j["allow_https"] = policy.allow_https;
    j["allow_http"] = policy.allow_http;
    j["allow_package_managers"] = policy.allow_package_managers;
    j["allowed_domains"] = std::move(domains);
    j["allowed_cidrs"] = std::move(cidrs);
    j["tunnel_sni_check"] = policy.tunnel_sni_check;
    return j;
}

std::optional<EgressPolicy> policy_from_json(const nlohmann::json& j, std::string* error) {
    return decode_or_error<EgressPolicy>(j, error, decode_policy);
}

}  // namespace vaultgate
