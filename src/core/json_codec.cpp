// JSON <-> ServiceConfig and EgressPolicy, for admin API bodies and the store.
// The rules mirror the config loader's (src/core/config.cpp), whose helpers are
// private to it; a change to one set of rules must be made in both places.
// Values are never quoted in an error: admin API bodies may hold a secret in a
// field where a name was expected, and errors travel to responses and logs.
#include "vaultgate/json_codec.hpp"

#include "vaultgate/host.hpp"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <set>

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
        case json::value_t::null: return "null";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "a list";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "an integer";
        case json::value_t::number_float: return "a number";
        default: return "a value";
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

void require_object(const json& j, const std::string& path, std::initializer_list<std::string_view> allowed) {
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
    const std::int64_t v = j.is_number_unsigned() ? (j.get<std::uint64_t>() > 65535 ? 0 : j.get<std::int64_t>())
                                                  : j.get<std::int64_t>();
    if (v < 1 || v > 65535) fail(path, "must be between 1 and 65535");
    return static_cast<std::uint16_t>(v);
}

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

// Credential names appear in URLs and logs: the config loader's alphabet.
bool is_valid_name(std::string_view s) {
    if (s.empty() || s.size() > 128 || s == "." || s == "..") return false;
    for (char c : s)
        if (!is_name_char(c)) return false;
    return true;
}

bool is_tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_http_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

// Headers that steer framing, routing or the connection: a secret injected there
// would corrupt the request or smuggle a second one. Compared after '_' -> '-'
// because injection strips the underscore spellings too.
bool is_reserved_header(std::string_view name) {
    std::string n;
    for (char c : name) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        n += (c == '_') ? '-' : c;
    }
    static const std::set<std::string, std::less<>> reserved = {
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
        "expect", "proxy-connection",
    };
    return reserved.count(n) > 0 || n.starts_with("proxy-");
}

// A header value must not be able to start a new header line.
bool is_header_value_text(std::string_view s) {
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
    }
    return true;
}

bool is_query_param_name(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("-_.~[]").find(c) != std::string_view::npos))
            return false;
    return true;
}

// A prefix is compared textually with request paths, so it must be in the form
// requests use: absolute, no query or fragment, no dot segments, no spaces.
void check_path_prefix(std::string_view p, const std::string& path) {
    if (p.empty() || p[0] != '/') fail(path, "must start with \"/\"");
    for (char c : p) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '?' || c == '#' || c == '\\')
            fail(path, "may not contain spaces, control bytes, '?', '#', '\\' or non-ASCII bytes");
    }
    std::size_t start = 1;
    while (start <= p.size()) {
        std::size_t end = p.find('/', start);
        if (end == std::string_view::npos) end = p.size();
        const auto seg = p.substr(start, end - start);
        if (seg == "." || seg == "..") fail(path, "may not contain \".\" or \"..\" segments");
        start = end + 1;
    }
}

std::string service_host(const json& j, const std::string& path) {
    const auto raw = string_value(j, path);
    if (raw.empty()) fail(path, "must not be empty");
    const bool wildcard = raw.starts_with("*.");
    const auto res = normalize_host(wildcard ? std::string_view(raw).substr(2) : std::string_view(raw));
    if (!res) fail(path, "invalid host: " + std::string(host_error_text(res.error)));
    if (!wildcard) return *res.host;
    if (res.kind != HostKind::name) fail(path, "a wildcard needs a domain name");
    // "*.com" would hand the secret to every host under a public suffix the
    // sandbox can pick; a registrable-looking suffix at least needs a dot.
    if (res.host->find('.') == std::string::npos) fail(path, "a wildcard must name at least two labels after \"*.\"");
    return "*." + *res.host;
}

AuthSpec decode_auth(const json& j, const std::string& path) {
    require_object(j, path, {"type", "header", "key", "user", "template", "param"});
    AuthSpec spec;
    const auto* type = field(j, "type");
    if (!type) fail(path, "missing required key 'type' (one of api-key, bearer, basic, header, query)");
    const auto t = string_value(*type, child(path, "type"));
    std::vector<std::string_view> used;  // the optional keys this type reads
    if (t == "api-key") {
        spec.type = AuthType::api_key;
        used = {"header"};
    } else if (t == "bearer") {
        spec.type = AuthType::bearer;
    } else if (t == "basic") {
        spec.type = AuthType::basic;
        used = {"user"};
    } else if (t == "header") {
        spec.type = AuthType::header;
        used = {"header", "template"};
    } else if (t == "query") {
        spec.type = AuthType::query;
        used = {"param"};
    } else {
        fail(child(path, "type"), "expected one of api-key, bearer, basic, header, query");
    }
    // A key the type ignores is almost always a mistake in `type`; refusing it
    // beats injecting something other than what the caller had in mind.
    for (const auto& [key, value] : j.items()) {
        if (key == "type" || key == "key" || value.is_null()) continue;
        bool is_used = false;
        for (auto u : used) is_used = is_used || u == key;
        if (!is_used) fail(child(path, key), "not used by auth type " + t);
    }

    const auto* key = field(j, "key");
    if (!key) fail(path, "missing required key 'key' (the credential to inject)");
    spec.key = string_value(*key, child(path, "key"));
    if (!is_valid_name(spec.key)) fail(child(path, "key"), "expected a credential name of [A-Za-z0-9_.-]");

    if (spec.type == AuthType::api_key || spec.type == AuthType::header) {
        const auto* header = field(j, "header");
        if (!header && spec.type == AuthType::header) fail(path, "missing required key 'header' for auth type header");
        if (header) {
            const auto p = child(path, "header");
            const auto name = string_value(*header, p);
            if (!is_http_token(name)) fail(p, "not a valid HTTP header name");
            if (is_reserved_header(name)) fail(p, "a framing or hop-by-hop header cannot carry a credential");
            spec.header = name;
        }
    }
    if (spec.type == AuthType::header) {
        const auto* tmpl = field(j, "template");
        if (!tmpl) fail(path, "missing required key 'template' for auth type header");
        const auto p = child(path, "template");
        const auto text = string_value(*tmpl, p);
        const auto first = text.find("{secret}");
        if (first == std::string::npos || text.find("{secret}", first + 1) != std::string::npos)
            fail(p, "must contain \"{secret}\" exactly once");
        if (!is_header_value_text(text)) fail(p, "may not contain control characters");
        spec.value_template = text;
    }
    if (spec.type == AuthType::basic) {
        const auto* user = field(j, "user");
        if (!user) fail(path, "missing required key 'user' for auth type basic");
        const auto p = child(path, "user");
        const auto u = string_value(*user, p);
        // RFC 7617: the user-id cannot contain a colon.
        if (u.find(':') != std::string::npos || !is_header_value_text(u) || u.find('\t') != std::string::npos)
            fail(p, "may not contain ':' or control characters");
        spec.user = u;
    }
    if (spec.type == AuthType::query) {
        const auto* param = field(j, "param");
        if (!param) fail(path, "missing required key 'param' for auth type query");
        const auto p = child(path, "param");
        const auto name = string_value(*param, p);
        if (!is_query_param_name(name)) fail(p, "expected a query parameter name of [A-Za-z0-9-_.~[]]");
        spec.param = name;
    }
    return spec;
}

ServiceConfig decode_service(const json& j) {
    require_object(j, "", {"host", "port", "path_prefix", "auth_config", "redact_response"});
    ServiceConfig svc;
    const auto* host = field(j, "host");
    if (!host) fail("", "missing required key 'host'");
    svc.host = service_host(*host, "host");
    if (const auto* p = field(j, "port")) svc.port = port_value(*p, "port");
    if (const auto* p = field(j, "path_prefix")) {
        svc.path_prefix = string_value(*p, "path_prefix");
        check_path_prefix(svc.path_prefix, "path_prefix");
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
    require_object(j, "", {"allow_https", "allow_http", "allow_package_managers", "allowed_domains", "allowed_cidrs"});
    EgressPolicy policy;
    if (const auto* x = field(j, "allow_https")) policy.allow_https = bool_value(*x, "allow_https");
    if (const auto* x = field(j, "allow_http")) policy.allow_http = bool_value(*x, "allow_http");
    if (const auto* x = field(j, "allow_package_managers"))
        policy.allow_package_managers = bool_value(*x, "allow_package_managers");
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

std::string_view auth_type_name(AuthType type) {
    switch (type) {
        case AuthType::api_key: return "api-key";
        case AuthType::bearer: return "bearer";
        case AuthType::basic: return "basic";
        case AuthType::header: return "header";
        case AuthType::query: return "query";
    }
    return "api-key";
}

std::string domain_rule_text(const DomainRule& rule) {
    std::string out = rule.wildcard ? "*." + rule.host : rule.host;
    if (rule.port) out += ":" + std::to_string(*rule.port);
    return out;
}

std::string cidr_text(const Cidr& cidr) { return cidr.base.to_string() + "/" + std::to_string(cidr.prefix_len); }

nlohmann::json service_to_json(const ServiceConfig& service) {
    json auth = json::object();
    auth["type"] = auth_type_name(service.auth.type);
    auth["key"] = service.auth.key;
    switch (service.auth.type) {
        case AuthType::api_key: auth["header"] = service.auth.header; break;
        case AuthType::bearer: break;
        case AuthType::basic: auth["user"] = service.auth.user; break;
        case AuthType::header:
            auth["header"] = service.auth.header;
            auth["template"] = service.auth.value_template;
            break;
        case AuthType::query: auth["param"] = service.auth.param; break;
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
    return j;
}

std::optional<EgressPolicy> policy_from_json(const nlohmann::json& j, std::string* error) {
    return decode_or_error<EgressPolicy>(j, error, decode_policy);
}

}  // namespace vaultgate
