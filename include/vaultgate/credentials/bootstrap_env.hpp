#pragma once
// The pure half of `vaultgate bootstrap` (docs/reference/bootstrap.md):
// which input variables are secrets, which are URLs, which URL a secret belongs
// to, and how the sandbox's environment is written out. No I/O and no network,
// so every rule is tested by table; the command in src/cli/bootstrap.cpp only
// adds the admin API calls and the files.
#include "vaultgate/egress/host.hpp"
#include "vaultgate/util/secret.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

struct EnvVar {
    std::string name;
    std::string value;
};

// Ordered: the output lists the input's variables in the order they came.
using EnvList = std::vector<EnvVar>;

struct SecretVar {
    std::string name;
    Secret value;
};

// [A-Za-z_][A-Za-z0-9_]*: anything else could not be exported, and in the shell
// format a name is written unquoted, so a looser rule would be an injection.
bool is_env_name(std::string_view name);

// Parses the env object a platform hands out: a JSON object whose values are all
// strings. On bad input returns nullopt and sets *error; the message never quotes
// the input, since it holds real secrets (nlohmann's own parse errors echo the
// last token read, so they are not passed on).
std::optional<EnvList> parse_env_object(std::string_view text, std::string* error);

// Names ending in _API_KEY, _TOKEN or _SECRET.
bool has_secret_suffix(std::string_view name);

// The secret variables: exactly those in `named` when it is not empty (each must
// be present and non-empty, else nullopt and *error), otherwise every variable
// with a secret suffix and a non-empty value, and AWS's key pair when both of
// it are there (aws_env.hpp). An empty value holds no secret, and
// an empty credential could never authenticate anything.
std::optional<std::vector<std::string>> choose_secret_names(const EnvList& vars, const std::vector<std::string>& named,
                                                            std::string* error);

// "vaultgate-placeholder-NAME": derived from the name only, so it carries no bit
// of the value, and non-empty, so SDKs that refuse a missing key still start.
std::string placeholder_for(std::string_view name);

// Moves each named variable's value into a Secret, wipes the plain copy, and
// leaves the placeholder in its place. Names not in `vars` are skipped.
std::vector<SecretVar> take_secrets(EnvList& vars, const std::vector<std::string>& names);

// The secrets the admin API would refuse: a value that breaks the credential
// rule (validation::check_credential_value: a control byte, too long) or that
// JSON cannot carry (not UTF-8). Found before a run has changed anything.
struct UnsendableSecret {
    std::string name;
    std::string reason;  // never contains the value
};
std::vector<UnsendableSecret> unsendable_secrets(const std::vector<SecretVar>& secrets);

// Replaces every occurrence of a secret's value inside the other variables (a URL
// with the key in its query, say) with that secret's placeholder. Returns the
// names of the variables it changed, so the caller can say so.
std::vector<std::string> scrub_other_values(EnvList& vars, const std::vector<SecretVar>& secrets);

// An http:// or https:// URL's destination. The scheme is matched without
// regard to case; user info, path, query and fragment are ignored; the host is
// normalised as the proxy normalises it, so it matches what the proxy will see.
struct UrlTarget {
    bool tls = true;
    Authority authority;  // port 443 or 80 when the URL gives none
};
std::optional<UrlTarget> parse_url_target(std::string_view value);

struct UrlVar {
    std::string name;
    UrlTarget target;
};

// HTTPS_PROXY, http_proxy, ALL_PROXY, NO_PROXY and the like: the platform's own
// proxy settings, which the session's replace.
bool is_proxy_setting(std::string_view name);

// The variables whose value is an http(s) URL with a valid host, in input
// order. Proxy settings are not among them: a proxy is not where a key goes.
std::vector<UrlVar> find_url_vars(const EnvList& vars);

// The URL variable a secret belongs to, as an index into `urls`. With exactly
// one URL variable, that one. Otherwise the one sharing the most leading
// `_`-separated words with the secret's name (OPENAI_API_KEY -> OPENAI_BASE_URL);
// whole words, because OPENAI and OPENROUTER share four letters and nothing
// else. nullopt when no URL shares a word, or when the best is a tie: binding a
// key to the wrong host would send it there.
std::optional<std::size_t> match_url_var(std::string_view secret_name, const std::vector<UrlVar>& urls);

// Sets NAME, replacing the value in place when it is already there (so a proxy
// variable the platform passed in is overridden, not printed twice).
void set_env(EnvList& vars, std::string_view name, std::string value);
const std::string* find_env(const EnvList& vars, std::string_view name);

enum class EnvFormat {
    env,    // NAME=value, one per line, unquoted: for `env -i $(cat file)`-style use
    shell,  // export NAME='value', single-quoted
    json,   // one JSON object, in order
};
std::optional<EnvFormat> parse_env_format(std::string_view text);

// Why `vars` cannot be written in `format`, as "NAME: reason", or nullopt when it
// can: a line break in the env format would start a new variable, a NUL cannot
// be in an environment at all, and JSON needs UTF-8.
std::optional<std::string> render_problem(const EnvList& vars, EnvFormat format);

// Renders; call render_problem first (this one writes what it is given).
std::string render_env(const EnvList& vars, EnvFormat format);

// 'text' for a POSIX shell: a ' becomes '\'' and nothing else is special.
std::string shell_single_quote(std::string_view text);

// The names of the secrets whose value occurs anywhere in `text`: the last
// check before anything is printed.
std::vector<std::string> leaked_secrets(std::string_view text, const std::vector<SecretVar>& secrets);

}  // namespace vaultgate
