// One copy of the service, auth spec and policy rules; see validation.hpp for
// why, and for the promise that no message quotes the value it checks.
#include "vaultgate/credentials/validation.hpp"

#include "vaultgate/credentials/path_prefix.hpp"
#include "vaultgate/egress/host.hpp"
#include "vaultgate/http/syntax.hpp"
#include "vaultgate/util/secret.hpp"

#include <cctype>

#include <set>
#include <vector>

namespace vaultgate::validation {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
}

}  // namespace

bool is_valid_name(std::string_view name) {
    if (name.empty() || name.size() > max_name_length || name == "." || name == "..") return false;
    for (char c : name)
        if (!is_name_char(c)) return false;
    return true;
}

std::optional<std::string> check_name(std::string_view name, std::string_view kind) {
    if (is_valid_name(name)) return std::nullopt;
    return "expected a " + std::string(kind) + " name of [A-Za-z0-9_.-] (at most " + std::to_string(max_name_length) +
           " characters, not \".\" or \"..\")";
}

std::optional<std::string> check_credential_value(std::string_view value) {
    if (value.empty()) return "must not be empty";
    if (value.size() > max_credential_bytes) return "longer than " + std::to_string(max_credential_bytes) + " bytes";
    for (const char c : value) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return "must not contain CR, LF, NUL or other control bytes";
    }
    return std::nullopt;
}

std::optional<std::string> normalise_admin_token(std::string& text) {
    auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    std::size_t begin = 0;
    std::size_t end = text.size();
    while (begin < end && is_space(text[begin])) ++begin;
    while (end > begin && is_space(text[end - 1])) --end;
    if (begin > 0 || end < text.size()) {
        std::string trimmed = text.substr(begin, end - begin);
        wipe_string(text);
        text = std::move(trimmed);
        wipe_string(trimmed);  // a short string is copied, not moved
    }
    if (text.size() < min_admin_token_length)
        return "must hold a token of at least " + std::to_string(min_admin_token_length) + " characters";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return "holds a control character inside the token";
    }
    return std::nullopt;
}

bool is_http_token(std::string_view s) { return syntax::is_token(s); }

// Injecting a secret into one of these would corrupt the request or smuggle a
// second one. Compared after '_' -> '-' because injection also strips the
// underscore spellings, and some servers read them as the dashed header.
bool is_reserved_header(std::string_view name) {
    std::string n;
    for (char c : name) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        n += (c == '_') ? '-' : c;
    }
    static const std::set<std::string, std::less<>> reserved = {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "expect",  // framing and routing
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",  // hop-by-hop
    };
    return reserved.count(n) > 0 || n.starts_with("proxy-");
}

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

std::optional<std::string> check_header_name(std::string_view name) {
    if (!is_http_token(name)) return "not a valid HTTP header name";
    if (is_reserved_header(name)) return "a framing or hop-by-hop header cannot carry a credential";
    return std::nullopt;
}

std::optional<std::string> check_header_template(std::string_view text) {
    const auto first = text.find("{secret}");
    if (first == std::string_view::npos || text.find("{secret}", first + 1) != std::string_view::npos)
        return "must contain \"{secret}\" exactly once";
    if (!is_header_value_text(text)) return "may not contain control characters";
    return std::nullopt;
}

std::optional<std::string> check_basic_user(std::string_view user) {
    // The user-id and password are joined with ':' before encoding, so a colon
    // in the user would move part of it into the password. Tab is refused too:
    // it is allowed in header values, not in a user-id.
    if (user.find(':') != std::string_view::npos || !is_header_value_text(user) ||
        user.find('\t') != std::string_view::npos)
        return "may not contain ':' or control characters";
    return std::nullopt;
}

std::optional<std::string> check_query_param(std::string_view name) {
    if (!is_query_param_name(name)) return "expected a query parameter name of [A-Za-z0-9-_.~[]]";
    return std::nullopt;
}

std::optional<std::string> check_path_prefix(std::string_view prefix) {
    if (prefix.empty() || prefix[0] != '/') return "must start with \"/\"";
    for (char c : prefix) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '?' || c == '#' || c == '\\')
            return "may not contain spaces, control bytes, '?', '#', '\\' or non-ASCII bytes";
    }
    std::size_t start = 1;
    while (start <= prefix.size()) {
        std::size_t end = prefix.find('/', start);
        if (end == std::string_view::npos) end = prefix.size();
        const auto seg = prefix.substr(start, end - start);
        if (seg == "." || seg == "..") return "may not contain \".\" or \"..\" segments";
        start = end + 1;
    }
    // A request path is only compared with a prefix when it is plain; a prefix
    // that is not would never cover anything.
    if (!is_plain_path(prefix))
        return "may not contain ';', a run of dots as a segment, or an escape of '.', '/', '\\', ';', '%' or a "
               "control byte (no request path with them is ever covered)";
    return std::nullopt;
}

std::optional<std::string> check_service_port(std::int64_t port) {
    if (port < 1 || port > 65535) return "must be between 1 and 65535";
    return std::nullopt;
}

std::optional<std::string> check_service_host(std::string_view raw, std::string* normalised) {
    if (raw.empty()) return "must not be empty";
    const bool wildcard = raw.starts_with("*.");
    const auto res = normalize_host(wildcard ? raw.substr(2) : raw);
    if (!res) return "invalid host: " + std::string(host_error_text(res.error));
    if (!wildcard) {
        *normalised = *res.host;
        return std::nullopt;
    }
    if (res.kind != HostKind::name) return "a wildcard needs a domain name";
    // "*.com" would hand the secret to every host under a public suffix the
    // sandbox can pick; a registrable-looking suffix at least needs a dot.
    if (res.host->find('.') == std::string::npos) return "a wildcard must name at least two labels after \"*.\"";
    *normalised = "*." + *res.host;
    return std::nullopt;
}

}  // namespace vaultgate::validation
