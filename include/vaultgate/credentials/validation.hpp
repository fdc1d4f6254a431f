#pragma once
// The rules a bound service, its auth spec and an egress policy must follow,
// kept once for both ways they come in: the config file (config_vaults.cpp,
// config_policies.cpp) and admin API bodies (json_codec.cpp). Two copies of a
// rule drift apart, and then the API would accept what the config file refuses.
//
// Each check returns nullopt for a good value and otherwise says what is wrong.
// A message never contains the value checked: the caller knows whether the
// value is safe to quote (a header name is, a template may hold a pasted
// secret) and how to say where it was (file:line:col, or a JSON field path).
// Pure functions, no I/O.
#include "vaultgate/credentials/inject.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate::validation {

// --- names ---------------------------------------------------------------------

// Vault, session, policy and credential names appear in URLs, logs and
// Proxy-Authorization; a small alphabet keeps them unambiguous everywhere, and
// "." and ".." would be resolved away in a URL path.
inline constexpr std::size_t max_name_length = 128;
bool is_valid_name(std::string_view name);

// `kind` says what the name is for ("vault", "credential", ...) in the message.
std::optional<std::string> check_name(std::string_view name, std::string_view kind);

// --- credential values ---------------------------------------------------------

// A credential goes into a header line or a query string, so one rule for every
// way it comes in (config file or env, admin API, the bootstrapper): not empty,
// at most this long, and no control byte (CR, LF or NUL would split the request;
// the others are refused alike, so no path accepts what another refuses).
inline constexpr std::size_t max_credential_bytes = 16 * 1024;
std::optional<std::string> check_credential_value(std::string_view value);

// --- the admin token ---------------------------------------------------------------

// The admin.token_file holds the token on one line; whitespace around it is not
// part of it. Trims `text` in place (wiping what it drops) and checks it: at
// least 16 characters, no control byte inside (it travels in a header line).
// The server and the CLI both read the file through this, so they agree.
inline constexpr std::size_t min_admin_token_length = 16;
std::optional<std::string> normalise_admin_token(std::string& text);

// --- HTTP pieces -----------------------------------------------------------------

// RFC 9110 token: what a header field name may be.
bool is_http_token(std::string_view s);

// Headers that steer framing, routing or the connection itself (hop-by-hop,
// Host, Content-Length, any Proxy-*), in any letter case and with '_' for '-'.
bool is_reserved_header(std::string_view name);

// No control bytes but tab: a header value must not be able to start a new line.
bool is_header_value_text(std::string_view s);

// Unreserved characters plus the brackets of "a[]=" style names.
bool is_query_param_name(std::string_view s);

// --- services --------------------------------------------------------------------

// A header that carries a credential: a token and not a reserved header.
std::optional<std::string> check_header_name(std::string_view name);

// The value template of auth type header: "{secret}" exactly once, no control bytes.
std::optional<std::string> check_header_template(std::string_view text);

// The user-id of auth type basic (RFC 7617: no colon).
std::optional<std::string> check_basic_user(std::string_view user);

// The parameter of auth type query.
std::optional<std::string> check_query_param(std::string_view name);

// A path prefix is compared textually with request paths, so it must be in the
// form requests use: absolute, no query or fragment, no dot segments, no spaces.
std::optional<std::string> check_path_prefix(std::string_view prefix);

// 1-65535; signed so that a negative number from JSON is refused here too.
std::optional<std::string> check_service_port(std::int64_t port);

// A name or IP literal, or "*.name" for the subdomains of a name with at least
// two labels. On success *normalised is the canonical form ("*." kept).
std::optional<std::string> check_service_host(std::string_view raw, std::string* normalised);

// --- auth specs ----------------------------------------------------------------

// The keys an auth object may have, for the callers' unknown-key check.
inline constexpr std::array<std::string_view, 23> auth_keys = {
    "type",          "header",          "key",           "user",          "template",
    "param",         "access_key_id",   "secret_access_key", "session_token", "region",
    "service",       "token_url",       "client_id",     "client_secret", "scope",
    "audience",      "client_auth",     "app_id",        "installation_id", "private_key",
    "api_url",       "scheme",          "scopes"};

// The keys whose value is a credential name of the vault (not shown in
// errors: a pasted secret is where a name belongs).
bool names_credential(std::string_view auth_key);

// "api-key", "bearer", "basic", "header", "query", "aws-sigv4",
// "oauth2-client-credentials", "github-app", "jwt-bearer".
std::optional<AuthType> parse_auth_type(std::string_view name);

// The value of one key of an auth object: text, or a list of texts (`scopes`).
struct AuthValue {
    AuthValue() = default;
    AuthValue(std::string t) : text(std::move(t)) {}  // NOLINT: implicit, as a plain string reads
    AuthValue(const char* t) : text(t) {}              // NOLINT
    AuthValue(std::vector<std::string> items) : list(std::move(items)), is_list(true) {}  // NOLINT

    std::string text;
    std::vector<std::string> list;
    bool is_list = false;
};

// The value of each key present in an auth object, by key. The caller has
// already refused keys outside auth_keys, skipped null values and refused
// values that are neither a string nor a list of strings.
using AuthFields = std::map<std::string, AuthValue, std::less<>>;

struct FieldError {
    std::string field;        // the key at fault; empty when a required key is missing
    std::string message;      // never contains the value
    bool key_itself = false;  // the key does not belong here, whatever its value
};

// Builds the spec, checking that the type is known, that every key is one the
// type reads, that the keys it needs are there and that each value is well
// formed. Credential names are checked for their form only: whether a vault holds that
// credential is the caller's question. Reports the first problem found.
std::optional<FieldError> build_auth_spec(const AuthFields& fields, AuthSpec* out);

// --- egress policies -------------------------------------------------------------

// The keys a policy object may have, for the callers' unknown-key check.
inline constexpr std::array<std::string_view, 6> policy_keys = {
    "allow_https", "allow_http", "allow_package_managers", "allowed_domains", "allowed_cidrs", "tunnel_sni_check"};

}  // namespace vaultgate::validation
