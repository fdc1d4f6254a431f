#include "vaultgate/credentials/bootstrap_env.hpp"

#include "vaultgate/credentials/aws_env.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/json_text.hpp"
#include "vaultgate/util/json_wipe.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace vaultgate {

namespace {

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        char c = text[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != prefix[i]) return false;
    }
    return true;
}

// "line L, column C" of a byte offset, so a parse error can say where without
// quoting what is there.
std::string position_text(std::string_view text, std::size_t offset) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string_view json_type_text(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return "null";
        case nlohmann::ordered_json::value_t::boolean:
            return "a boolean";
        case nlohmann::ordered_json::value_t::object:
            return "an object";
        case nlohmann::ordered_json::value_t::array:
            return "an array";
        case nlohmann::ordered_json::value_t::string:
            return "a string";
        default:
            return "a number";
    }
}

std::vector<std::string_view> name_words(std::string_view name) {
    std::vector<std::string_view> words;
    std::size_t start = 0;
    while (start <= name.size()) {
        std::size_t end = name.find('_', start);
        if (end == std::string_view::npos) end = name.size();
        words.push_back(name.substr(start, end - start));
        start = end + 1;
    }
    return words;
}

std::size_t common_leading_words(std::string_view a, std::string_view b) {
    auto wa = name_words(a), wb = name_words(b);
    std::size_t n = 0;
    // An empty word (a leading "_") is no evidence of anything shared.
    while (n < wa.size() && n < wb.size() && !wa[n].empty() && wa[n] == wb[n]) ++n;
    return n;
}

bool is_secret_name(std::string_view name, const std::vector<SecretVar>& secrets) {
    return std::any_of(secrets.begin(), secrets.end(), [&](const SecretVar& s) { return s.name == name; });
}

}  // namespace

bool is_env_name(std::string_view name) {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        char c = name[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0)) return false;
    }
    return true;
}

std::optional<EnvList> parse_env_object(std::string_view text, std::string* error) {
    nlohmann::ordered_json doc;
    try {
        doc = nlohmann::ordered_json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte is 1-based and points just past the offending character.
        *error = "stdin: not valid JSON at " + position_text(text, e.byte > 0 ? e.byte - 1 : 0) +
                 "; expected an object of string values";
        return std::nullopt;
    }
    if (!doc.is_object()) {
        *error = "stdin: expected a JSON object of string values, got " + std::string(json_type_text(doc));
        wipe_json_strings(doc);
        return std::nullopt;
    }
    EnvList vars;
    // Reserved up front: growing the vector would move strings, and a moved
    // short string leaves its bytes behind.
    vars.reserve(doc.size());
    std::size_t index = 0;
    for (auto& [key, value] : doc.items()) {
        ++index;
        if (!is_env_name(key)) {
            // The key is not quoted: a malformed input may have a secret there.
            *error = "stdin: key number " + std::to_string(index) +
                     " is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
        } else if (!value.is_string()) {
            *error = "stdin: the value of " + key + " is " + std::string(json_type_text(value)) + ", not a string";
        } else {
            vars.push_back({key, value.get_ref<const std::string&>()});
            continue;
        }
        for (auto& v : vars) wipe_string(v.value);
        wipe_json_strings(doc);
        return std::nullopt;
    }
    wipe_json_strings(doc);
    return vars;
}

bool has_secret_suffix(std::string_view name) {
    for (std::string_view suffix : {"_API_KEY", "_TOKEN", "_SECRET"})
        if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) return true;
    return false;
}

std::optional<std::vector<std::string>> choose_secret_names(const EnvList& vars, const std::vector<std::string>& named,
                                                            std::string* error) {
    std::vector<std::string> chosen;
    if (!named.empty()) {
        for (const auto& name : named) {
            const std::string* value = find_env(vars, name);
            if (value == nullptr) {
                *error = "--secret " + name + ": no such variable on stdin";
                return std::nullopt;
            }
            if (value->empty()) {
                *error = "--secret " + name + ": the variable is empty";
                return std::nullopt;
            }
            if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
        }
        return chosen;
    }
    const bool aws_pair = has_aws_key_pair(vars);
    for (const auto& var : vars) {
        const bool aws_key = aws_pair && (var.name == aws_access_key_var || var.name == aws_secret_key_var);
        if ((has_secret_suffix(var.name) || aws_key) && !var.value.empty()) chosen.push_back(var.name);
    }
    return chosen;
}

std::string placeholder_for(std::string_view name) { return "vaultgate-placeholder-" + std::string(name); }

std::vector<SecretVar> take_secrets(EnvList& vars, const std::vector<std::string>& names) {
    std::vector<SecretVar> secrets;
    secrets.reserve(names.size());
    for (const auto& name : names) {
        auto it = std::find_if(vars.begin(), vars.end(), [&](const EnvVar& v) { return v.name == name; });
        if (it == vars.end()) continue;
        secrets.push_back({name, Secret(std::string(it->value))});
        wipe_string(it->value);
        it->value = placeholder_for(name);
    }
    return secrets;
}

std::vector<UnsendableSecret> unsendable_secrets(const std::vector<SecretVar>& secrets) {
    std::vector<UnsendableSecret> found;
    for (const auto& secret : secrets) {
        const auto value = secret.value.reveal();
        if (auto why = validation::check_credential_value(value))
            found.push_back({secret.name, "the value " + *why});
        else if (!is_valid_utf8(value))
            found.push_back({secret.name, "the value is not valid UTF-8, which the admin API (JSON) cannot carry"});
    }
    return found;
}

std::vector<std::string> scrub_other_values(EnvList& vars, const std::vector<SecretVar>& secrets) {
    std::vector<std::string> changed;
    for (auto& var : vars) {
        if (is_secret_name(var.name, secrets)) continue;
        bool touched = false;
        for (const auto& secret : secrets) {
            std::string_view needle = secret.value.reveal();
            if (needle.empty() || var.value.find(needle) == std::string::npos) continue;
            std::string replacement = placeholder_for(secret.name);
            std::string scrubbed;
            std::size_t from = 0;
            for (std::size_t at; (at = var.value.find(needle, from)) != std::string::npos; from = at + needle.size())
                scrubbed.append(var.value, from, at - from).append(replacement);
            scrubbed.append(var.value, from, std::string::npos);
            wipe_string(var.value);
            var.value = std::move(scrubbed);
            touched = true;
        }
        if (touched) changed.push_back(var.name);
    }
    return changed;
}

std::optional<UrlTarget> parse_url_target(std::string_view value) {
    UrlTarget target;
    std::string_view rest;
    if (starts_with_nocase(value, "https://")) {
        rest = value.substr(8);
    } else if (starts_with_nocase(value, "http://")) {
        target.tls = false;
        rest = value.substr(7);
    } else {
        return std::nullopt;
    }
    std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    if (authority.empty()) return std::nullopt;
    auto parsed = parse_authority(authority, target.tls ? 443 : 80);
    if (!parsed) return std::nullopt;
    target.authority = *parsed.authority;
    return target;
}

bool is_proxy_setting(std::string_view name) {
    for (std::string_view proxy :
         {"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy", "no_proxy"})
        if (name == proxy) return true;
    return false;
}

std::vector<UrlVar> find_url_vars(const EnvList& vars) {
    std::vector<UrlVar> urls;
    for (const auto& var : vars) {
        if (is_proxy_setting(var.name)) continue;
        if (auto target = parse_url_target(var.value)) urls.push_back({var.name, *target});
    }
    return urls;
}

std::optional<std::size_t> match_url_var(std::string_view secret_name, const std::vector<UrlVar>& urls) {
    if (urls.size() == 1) return 0;
    std::optional<std::size_t> best;
    std::size_t best_words = 0;
    bool tie = false;
    for (std::size_t i = 0; i < urls.size(); ++i) {
        std::size_t words = common_leading_words(secret_name, urls[i].name);
        if (words == 0) continue;
        if (words > best_words) {
            best = i;
            best_words = words;
            tie = false;
        } else if (words == best_words) {
            tie = true;
        }
    }
    if (tie) return std::nullopt;
    return best;
}

void set_env(EnvList& vars, std::string_view name, std::string value) {
    for (auto& var : vars) {
        if (var.name == name) {
            var.value = std::move(value);
            return;
        }
    }
    vars.push_back({std::string(name), std::move(value)});
}

const std::string* find_env(const EnvList& vars, std::string_view name) {
    for (const auto& var : vars)
        if (var.name == name) return &var.value;
    return nullptr;
}

std::optional<EnvFormat> parse_env_format(std::string_view text) {
    if (text == "env") return EnvFormat::env;
    if (text == "shell") return EnvFormat::shell;
    if (text == "json") return EnvFormat::json;
    return std::nullopt;
}

std::optional<std::string> render_problem(const EnvList& vars, EnvFormat format) {
    for (const auto& var : vars) {
        if (!is_env_name(var.name)) return "a variable name is not of the form [A-Za-z_][A-Za-z0-9_]*";
        if (format == EnvFormat::json) {
            try {
                (void)nlohmann::json(var.value).dump();
            } catch (const nlohmann::json::exception&) {
                return var.name + ": the value is not valid UTF-8, which JSON cannot carry";
            }
            continue;
        }
        if (var.value.find('\0') != std::string::npos)
            return var.name + ": the value has a NUL byte, which no environment can carry";
        if (format == EnvFormat::env && var.value.find_first_of("\r\n") != std::string::npos)
            return var.name + ": the value has a line break, which the env format cannot carry (use shell or json)";
    }
    return std::nullopt;
}

std::string render_env(const EnvList& vars, EnvFormat format) {
    std::string out;
    switch (format) {
        case EnvFormat::env:
            for (const auto& var : vars) out += var.name + "=" + var.value + "\n";
            break;
        case EnvFormat::shell:
            for (const auto& var : vars) out += "export " + var.name + "=" + shell_single_quote(var.value) + "\n";
            break;
        case EnvFormat::json: {
            nlohmann::ordered_json doc = nlohmann::ordered_json::object();
            for (const auto& var : vars) doc[var.name] = var.value;
            out = doc.dump() + "\n";
            break;
        }
    }
    return out;
}

std::string shell_single_quote(std::string_view text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += '\'';
    return out;
}

std::vector<std::string> leaked_secrets(std::string_view text, const std::vector<SecretVar>& secrets) {
    std::vector<std::string> leaked;
    for (const auto& secret : secrets)
        if (!secret.value.empty() && text.find(secret.value.reveal()) != std::string_view::npos)
            leaked.push_back(secret.name);
    return leaked;
}

}  // namespace vaultgate
