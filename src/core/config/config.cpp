// The config file: YAML in, a validated Config out. Every refusal is a
// ConfigError "file:line:col: key.path: what is wrong", and nothing that could
// be a credential is ever echoed back into a message.
#include "vaultgate/config/config.hpp"

#include "vaultgate/egress/address.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"  // is_env_name
#include "vaultgate/config/service_binding.hpp"
#include "vaultgate/credentials/validation.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <span>
#include <sstream>
#include <string_view>

namespace vaultgate {

namespace {

using YAML::Node;

// A config file is a few kilobytes; a cap keeps a mistaken path (a log, a
// device) from being slurped whole.
constexpr std::size_t max_config_bytes = 1 << 20;

// Echoed values are short and printable, so a pasted blob or a terminal escape
// in a wrong place cannot flood or corrupt the error output.
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

// A shared rule's message (which never quotes the value) with the value added,
// for fields whose values are safe to show and help find the mistake.
std::string with_value(const std::string& why, std::string_view v) {
    return v.empty() ? why : why + ", got " + shown(v);
}

// The kind of a node without its value: for places where the value might be a
// secret pasted in by mistake.
std::string kind_of(const Node& n) {
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

// The kind, and for scalars the (shortened) value.
std::string described(const Node& n) {
    if (n.IsScalar()) return shown(n.Scalar());
    return kind_of(n);
}

// Plain scalars carry the non-specific tag "?"; quoted and block scalars carry
// "!". Booleans and integers must be plain, so `port: "443"` is a type error
// rather than a silent conversion.
bool is_plain(const Node& n) { return n.IsScalar() && n.Tag() == "?"; }

std::string child(const std::string& path, std::string_view key) {
    if (path.empty()) return std::string(key);
    return path + "." + std::string(key);
}

std::string indexed(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// The first two services, one of vault `a` and one of vault `b`, that bind
// the same host, port and path_prefix, as "vaults[i].services[j]" paths and
// what they bind; nullopt when there are none.
struct ServiceTie {
    std::string first, second, what;
};

std::optional<ServiceTie> tied_services(const std::vector<VaultConfig>& vaults, std::string_view a,
                                        std::string_view b) {
    for (std::size_t i = 0; i < vaults.size(); ++i) {
        if (vaults[i].name != a) continue;
        for (std::size_t k = 0; k < vaults.size(); ++k) {
            if (vaults[k].name != b) continue;
            for (std::size_t si = 0; si < vaults[i].services.size(); ++si)
                for (std::size_t sk = 0; sk < vaults[k].services.size(); ++sk) {
                    const auto& one = vaults[i].services[si];
                    if (!one.same_binding(vaults[k].services[sk])) continue;
                    return ServiceTie{indexed(indexed("vaults", i) + ".services", si),
                                      indexed(indexed("vaults", k) + ".services", sk),
                                      one.host + ":" + std::to_string(one.port) + " path_prefix " + one.path_prefix};
                }
        }
    }
    return std::nullopt;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
        if (!out.empty()) out += ", ";
        out += n;
    }
    return out;
}

std::optional<std::uint16_t> parse_port_text(std::string_view s, bool allow_zero) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    for (char c : s)
        if (c < '0' || c > '9') return std::nullopt;
    if (s.size() > 1 && s[0] == '0') return std::nullopt;
    unsigned v = 0;
    for (char c : s) v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > 65535 || (v == 0 && !allow_zero)) return std::nullopt;
    return static_cast<std::uint16_t>(v);
}

// "ip:port", "[v6]:port", "unix:/path". Names are refused: a listener binds to
// an address, and resolving at startup would make the bind depend on DNS.
std::optional<ListenAddress> parse_listen_address(std::string_view text, bool allow_unix, std::string* why) {
    ListenAddress out;
    if (text.starts_with("unix:")) {
        if (!allow_unix) {
            *why = "unix sockets are only supported for listen.admin";
            return std::nullopt;
        }
        const auto path = text.substr(5);
        // sun_path holds 108 bytes including the terminating NUL.
        if (path.empty() || path.size() > 107 || path.find('\0') != std::string_view::npos) {
            *why = "expected unix:/path (at most 107 bytes)";
            return std::nullopt;
        }
        out.unix_path = std::string(path);
        return out;
    }
    const std::string expected =
        std::string("expected IP:PORT or [IPv6]:PORT") + (allow_unix ? " or unix:/path" : "") + ", got " + shown(text);
    std::string_view host;
    std::string_view port;
    bool bracketed = false;
    if (text.starts_with("[")) {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            *why = expected;
            return std::nullopt;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        bracketed = true;
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            *why = expected;
            return std::nullopt;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    const auto ip = parse_ip_strict(host);
    // An unbracketed IPv6 address is ambiguous with its port; a bracketed IPv4 is not a thing.
    if (!ip || ip->v6 != bracketed) {
        *why = expected;
        return std::nullopt;
    }
    const auto p = parse_port_text(port, /*allow_zero=*/true);
    if (!p) {
        *why = "port must be 0-65535 without leading zeros, got " + shown(port);
        return std::nullopt;
    }
    out.host = std::string(host);
    for (auto& c : out.host)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    out.port = *p;
    return out;
}

struct Entry {
    std::string key;
    Node key_node;
    Node value;
};

// The position a message about an entry points at: its value, except for an
// empty value, whose mark yaml-cpp sets to the following token.
YAML::Mark where(const Entry& e) {
    if (e.value.IsNull() || e.value.Mark().is_null()) return e.key_node.Mark();
    return e.value.Mark();
}

class Parser {
public:
    explicit Parser(std::string source) : source_(std::move(source)) {}

    [[noreturn]] void fail(const YAML::Mark& m, const std::string& path, const std::string& what) const {
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

    Config parse(const Node& root) {
        Config cfg;
        cfg.source_path = source_;
        // An empty file is more likely a truncated one (a failed write, a
        // reload mid-edit) than a wish for every default, which `{}` says.
        if (!root.IsDefined() || root.IsNull())
            fail(root.Mark(), "", "the config file is empty (nothing but whitespace, comments or null); "
                                  "write {} to take every default");
        if (!root.IsMap()) fail(root.Mark(), "", "expected a map of sections at the top level, got " + kind_of(root));

        const auto top = fields_of(
            root, "",
            {"listen", "ca", "upstream", "store", "admin", "log", "limits", "vaults", "sessions", "egress_policies"});
        if (auto* e = find(top, "listen")) parse_listen(*e, cfg);
        if (auto* e = find(top, "ca")) parse_ca(*e, cfg);
        if (auto* e = find(top, "upstream")) parse_upstream(*e, cfg);
        if (auto* e = find(top, "store")) parse_store(*e, cfg);
        if (auto* e = find(top, "admin")) parse_admin(*e, cfg);
        if (auto* e = find(top, "log")) parse_log(*e, cfg);
        if (auto* e = find(top, "limits")) parse_limits(*e, cfg.limits);
        // Policies and vaults before sessions, which refer to both.
        if (auto* e = find(top, "vaults")) parse_vaults(*e, cfg);
        if (auto* e = find(top, "egress_policies")) parse_policies(*e, cfg);
        if (auto* e = find(top, "sessions")) parse_sessions(*e, cfg);
        return cfg;
    }

private:
    using Fields = std::map<std::string, Entry, std::less<>>;
    using Keys = std::span<const std::string_view>;

    static const Entry* find(const Fields& f, std::string_view key) {
        auto it = f.find(key);
        return it == f.end() ? nullptr : &it->second;
    }

    // The entries of a map in file order. A repeated key is an error: yaml-cpp
    // would silently keep one of them, and which one is a surprise either way.
    std::vector<Entry> entries(const Entry& e, const std::string& path) {
        if (e.value.IsNull()) return {};  // an empty section is the same as an absent one
        if (!e.value.IsMap()) fail(where(e), path, "expected a map, got " + kind_of(e.value));
        return entries_of(e.value, path);
    }

    std::vector<Entry> entries_of(const Node& map, const std::string& path) {
        std::vector<Entry> out;
        std::map<std::string, YAML::Mark> seen;
        for (const auto& kv : map) {
            const Node& k = kv.first;
            if (!k.IsScalar()) fail(k.Mark(), path, "keys must be strings, got " + kind_of(k));
            const std::string key = k.Scalar();
            auto [it, inserted] = seen.emplace(key, k.Mark());
            if (!inserted)
                fail(k.Mark(), path,
                     "duplicate key " + shown(key) + " (first at line " + std::to_string(it->second.line + 1) + ")");
            out.push_back(Entry{key, k, kv.second});
        }
        return out;
    }

    Fields fields_of(const Node& map, const std::string& path, std::initializer_list<std::string_view> allowed) {
        return fields_of(map, path, Keys(allowed.begin(), allowed.size()));
    }

    Fields fields_of(const Node& map, const std::string& path, Keys allowed) {
        Fields out;
        for (auto& e : entries_of(map, path)) {
            bool known = false;
            for (auto a : allowed) known = known || a == e.key;
            if (!known) {
                std::string list;
                for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
                fail(e.key_node.Mark(), path, "unknown key " + shown(e.key) + " (allowed: " + list + ")");
            }
            std::string key = e.key;
            out.emplace(std::move(key), std::move(e));
        }
        return out;
    }

    // A section or list item that must be a map; null counts as empty.
    Fields section(const Entry& e, const std::string& path, std::initializer_list<std::string_view> allowed) {
        return section(e, path, Keys(allowed.begin(), allowed.size()));
    }

    Fields section(const Entry& e, const std::string& path, Keys allowed) {
        if (e.value.IsNull()) return {};
        if (!e.value.IsMap()) fail(where(e), path, "expected a map, got " + kind_of(e.value));
        return fields_of(e.value, path, allowed);
    }

    std::string string_value(const Entry& e, const std::string& path) {
        if (!e.value.IsScalar()) fail(where(e), path, "expected a string, got " + kind_of(e.value));
        return e.value.Scalar();
    }

    std::string nonempty_string(const Entry& e, const std::string& path) {
        auto s = string_value(e, path);
        if (s.empty()) fail(where(e), path, "must not be empty");
        return s;
    }

    void require_name(std::string_view name, std::string_view kind, const YAML::Mark& m, const std::string& path) {
        if (auto why = validation::check_name(name, kind)) fail(m, path, with_value(*why, name));
    }

    std::optional<std::string> optional_path(const Entry& e, const std::string& path) {
        if (e.value.IsNull()) return std::nullopt;
        return nonempty_string(e, path);
    }

    bool bool_value(const Entry& e, const std::string& path) {
        if (is_plain(e.value)) {
            const auto& s = e.value.Scalar();
            if (s == "true" || s == "True" || s == "TRUE") return true;
            if (s == "false" || s == "False" || s == "FALSE") return false;
        }
        fail(where(e), path, "expected true or false, got " + described(e.value));
    }

    std::uint64_t uint_value(const Entry& e, const std::string& path, std::uint64_t min, std::uint64_t max) {
        const std::string expected = "expected an integer, got " + described(e.value);
        if (!is_plain(e.value)) fail(where(e), path, expected);
        const auto& s = e.value.Scalar();
        if (s.empty() || s.size() > 18) fail(where(e), path, s.empty() ? expected : "value is too large");
        std::uint64_t v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') fail(where(e), path, expected);
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (v < min || v > max) {
            if (min == 1 && max == std::numeric_limits<std::uint64_t>::max())
                fail(where(e), path, "must be greater than 0");
            fail(where(e), path,
                 "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + s);
        }
        return v;
    }

    std::chrono::milliseconds duration_value(const Entry& e, const std::string& path) {
        if (e.value.IsScalar()) {
            if (auto d = parse_duration(e.value.Scalar())) {
                if (d->count() <= 0) fail(where(e), path, "must be greater than 0");
                return *d;
            }
        }
        fail(where(e), path, "expected a duration like 10s, 250ms, 2m or 1h, got " + described(e.value));
    }

    // A list; null counts as empty.
    std::vector<Node> list_value(const Entry& e, const std::string& path) {
        if (e.value.IsNull()) return {};
        if (!e.value.IsSequence()) fail(where(e), path, "expected a list, got " + kind_of(e.value));
        std::vector<Node> out;
        for (const auto& item : e.value) out.push_back(item);
        return out;
    }

    ListenAddress listen_value(const Entry& e, const std::string& path, bool allow_unix) {
        const std::string expected =
            std::string("expected IP:PORT or [IPv6]:PORT") + (allow_unix ? " or unix:/path" : "");
        if (!e.value.IsScalar()) fail(where(e), path, expected + ", got " + kind_of(e.value));
        std::string why;
        auto addr = parse_listen_address(e.value.Scalar(), allow_unix, &why);
        if (!addr) fail(where(e), path, why);
        return *addr;
    }

    void parse_listen(const Entry& e, Config& cfg) {
        const std::string path = "listen";
        const auto f = section(e, path, {"proxy", "transparent", "admin"});
        if (auto* p = find(f, "proxy")) cfg.listen_proxy = listen_value(*p, child(path, "proxy"), false);
        if (auto* p = find(f, "transparent")) {
            if (p->value.IsNull())
                cfg.listen_transparent.reset();
            else
                cfg.listen_transparent = listen_value(*p, child(path, "transparent"), false);
        }
        if (auto* p = find(f, "admin")) cfg.listen_admin = listen_value(*p, child(path, "admin"), true);

        // Two listeners on one fixed address would fail at bind time with a
        // less helpful message; port 0 (tests) is always distinct.
        auto clash = [&](const ListenAddress& a, const ListenAddress& b) {
            return !a.is_unix() && !b.is_unix() && a.port != 0 && a.port == b.port && a.host == b.host;
        };
        if (auto* p = find(f, "admin"); p && clash(cfg.listen_admin, cfg.listen_proxy))
            fail(where(*p), child(path, "admin"), "same address as listen.proxy");
        if (auto* p = find(f, "transparent"); p && cfg.listen_transparent) {
            if (clash(*cfg.listen_transparent, cfg.listen_proxy))
                fail(where(*p), child(path, "transparent"), "same address as listen.proxy");
            if (clash(*cfg.listen_transparent, cfg.listen_admin))
                fail(where(*p), child(path, "transparent"), "same address as listen.admin");
        }
    }

    void parse_ca(const Entry& e, Config& cfg) {
        const auto f = section(e, "ca", {"cert", "key"});
        if (auto* p = find(f, "cert")) cfg.ca_cert = nonempty_string(*p, "ca.cert");
        if (auto* p = find(f, "key")) cfg.ca_key = nonempty_string(*p, "ca.key");
    }

    void parse_upstream(const Entry& e, Config& cfg) {
        const auto f = section(e, "upstream", {"ca_file", "resolve"});
        if (auto* p = find(f, "ca_file")) cfg.upstream_ca_file = nonempty_string(*p, "upstream.ca_file");
        if (auto* p = find(f, "resolve")) {
            const std::string path = "upstream.resolve";
            for (const auto& r : entries(*p, path)) {
                const auto host = normalize_host(r.key);
                if (!host)
                    fail(r.key_node.Mark(), path,
                         "invalid host " + shown(r.key) + ": " + std::string(host_error_text(host.error)));
                if (host.kind != HostKind::name)
                    fail(r.key_node.Mark(), path, shown(r.key) + " is an IP address; only names can be resolved");
                const std::string item = child(path, *host.host);
                const auto ip_text = string_value(r, item);
                if (!parse_ip_strict(ip_text)) fail(where(r), item, "expected an IP address, got " + shown(ip_text));
                if (!cfg.upstream_resolve.emplace(*host.host, ip_text).second)
                    fail(r.key_node.Mark(), path, "host " + shown(*host.host) + " is listed twice");
            }
        }
    }

    void parse_store(const Entry& e, Config& cfg) {
        const auto f = section(e, "store", {"path", "master_key_file"});
        if (auto* p = find(f, "path")) cfg.store_path = nonempty_string(*p, "store.path");
        if (auto* p = find(f, "master_key_file"))
            cfg.store_master_key_file = optional_path(*p, "store.master_key_file");
    }

    void parse_admin(const Entry& e, Config& cfg) {
        const auto f = section(e, "admin", {"token_file"});
        if (auto* p = find(f, "token_file")) cfg.admin_token_file = optional_path(*p, "admin.token_file");
    }

    void parse_log(const Entry& e, Config& cfg) {
        const auto f = section(e, "log", {"access", "level"});
        if (auto* p = find(f, "access")) cfg.log_access = nonempty_string(*p, "log.access");
        if (auto* p = find(f, "level")) {
            const auto level = string_value(*p, "log.level");
            if (level != "error" && level != "warn" && level != "info" && level != "debug")
                fail(where(*p), "log.level", "expected one of error, warn, info, debug, got " + shown(level));
            cfg.log_level = level;
        }
    }

    void parse_limits(const Entry& e, Limits& limits) {
        const std::string path = "limits";
        const auto f = section(
            e, path,
            {"max_connections", "max_connections_per_client", "header_bytes", "header_count", "handshake_timeout",
             "header_timeout", "idle_timeout", "drain_timeout", "connect_timeout", "response_timeout",
             "upstream_idle_timeout", "worker_threads", "admin_connections"});
        constexpr auto any = std::numeric_limits<std::uint64_t>::max();
        auto count = [&](std::string_view key, std::size_t& out) {
            if (auto* p = find(f, key)) out = static_cast<std::size_t>(uint_value(*p, child(path, key), 1, any));
        };
        auto duration = [&](std::string_view key, std::chrono::milliseconds& out) {
            if (auto* p = find(f, key)) out = duration_value(*p, child(path, key));
        };
        count("max_connections", limits.max_connections);
        count("max_connections_per_client", limits.max_connections_per_client);
        count("header_bytes", limits.header_bytes);
        count("header_count", limits.header_count);
        count("admin_connections", limits.admin_connections);
        duration("handshake_timeout", limits.handshake_timeout);
        duration("header_timeout", limits.header_timeout);
        duration("idle_timeout", limits.idle_timeout);
        duration("drain_timeout", limits.drain_timeout);
        duration("connect_timeout", limits.connect_timeout);
        duration("response_timeout", limits.response_timeout);
        duration("upstream_idle_timeout", limits.upstream_idle_timeout);
        if (auto* p = find(f, "worker_threads"))
            limits.worker_threads = static_cast<std::size_t>(uint_value(*p, child(path, "worker_threads"), 0, 256));
    }

    // { env: NAME } or { file: PATH }. The value is never shown: a scalar here is
    // most likely the secret itself, and a bad env name may be one too.
    CredentialSource parse_credential(const Entry& e, const std::string& path) {
        const std::string shape = "use { env: NAME } or { file: PATH }";
        if (e.value.IsScalar()) fail(where(e), path, "inline values are not allowed; " + shape);
        if (!e.value.IsMap()) fail(where(e), path, "expected { env: NAME } or { file: PATH }, got " + kind_of(e.value));
        const auto f = fields_of(e.value, path, {"env", "file"});
        const auto* env = find(f, "env");
        const auto* file = find(f, "file");
        if (env && file) fail(file->key_node.Mark(), path, "give either env or file, not both");
        if (!env && !file) fail(where(e), path, "expected { env: NAME } or { file: PATH }");
        CredentialSource src;
        if (env) {
            const auto p = child(path, "env");
            if (!env->value.IsScalar() || !is_env_name(env->value.Scalar()))
                fail(where(*env), p, "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
            src.kind = CredentialSource::Kind::env;
            src.ref = env->value.Scalar();
        } else {
            const auto p = child(path, "file");
            if (!file->value.IsScalar() || file->value.Scalar().empty())
                fail(where(*file), p, "expected a file path, got " + kind_of(file->value));
            src.kind = CredentialSource::Kind::file;
            src.ref = file->value.Scalar();
        }
        return src;
    }

    std::string service_host(const Entry& e, const std::string& path) {
        const auto raw = string_value(e, path);
        std::string host;
        if (auto why = validation::check_service_host(raw, &host)) fail(where(e), path, with_value(*why, raw));
        return host;
    }

    AuthSpec parse_auth(const Entry& e, const std::string& path, const VaultConfig& vault) {
        if (!e.value.IsMap()) fail(where(e), path, "expected a map, got " + kind_of(e.value));
        const auto f = fields_of(e.value, path, validation::auth_keys);
        validation::AuthFields text;
        for (const auto& [key, entry] : f) text.emplace(key, string_value(entry, child(path, key)));
        AuthSpec spec;
        if (auto err = validation::build_auth_spec(text, &spec)) {
            if (err->field.empty()) fail(where(e), path, err->message);
            const Entry& at = f.at(err->field);
            const auto p = child(path, err->field);
            if (err->key_itself) fail(at.key_node.Mark(), p, err->message);
            // Names and types help find the mistake; key, user and template are
            // never shown, since a template is where a real secret gets pasted.
            const bool may_show = err->field == "type" || err->field == "header" || err->field == "param";
            fail(where(at), p, may_show ? with_value(err->message, text.at(err->field)) : err->message);
        }
        if (!vault.credentials.count(spec.key)) {
            std::vector<std::string> names;
            for (const auto& [n, _] : vault.credentials) names.push_back(n);
            fail(where(f.at("key")), child(path, "key"),
                 "no credential " + shown(spec.key) + " in vault '" + vault.name + "'" +
                     (names.empty() ? std::string(" (it has no credentials)")
                                    : " (credentials: " + joined(names) + ")"));
        }
        return spec;
    }

    ServiceConfig parse_service(const Node& node, const std::string& path, const VaultConfig& vault) {
        if (!node.IsMap()) fail(node.Mark(), path, "expected a map, got " + kind_of(node));
        const auto f = fields_of(node, path, {"host", "port", "path_prefix", "auth", "redact_response"});
        ServiceConfig svc;
        const auto* host = find(f, "host");
        if (!host) fail(node.Mark(), path, "missing required key 'host'");
        svc.host = service_host(*host, child(path, "host"));
        if (auto* p = find(f, "port")) {
            const auto pp = child(path, "port");
            const auto port = uint_value(*p, pp, 0, std::numeric_limits<std::uint64_t>::max());
            // uint_value takes at most 18 digits, so the value fits the signed check.
            if (auto why = validation::check_service_port(static_cast<std::int64_t>(port)))
                fail(where(*p), pp, *why + ", got " + std::to_string(port));
            svc.port = static_cast<std::uint16_t>(port);
        }
        if (auto* p = find(f, "path_prefix")) {
            const auto pp = child(path, "path_prefix");
            svc.path_prefix = string_value(*p, pp);
            if (auto why = validation::check_path_prefix(svc.path_prefix))
                fail(where(*p), pp, with_value(*why, svc.path_prefix));
        }
        const auto* auth = find(f, "auth");
        if (!auth) fail(node.Mark(), path, "missing required key 'auth'");
        svc.auth = parse_auth(*auth, child(path, "auth"), vault);
        if (auto* p = find(f, "redact_response")) svc.redact_response = bool_value(*p, child(path, "redact_response"));
        return svc;
    }

    void parse_vaults(const Entry& e, Config& cfg) {
        const std::string path = "vaults";
        const auto items = list_value(e, path);
        std::map<std::string, std::string> seen;  // name -> path of its first use
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto& node = items[i];
            const auto vpath = indexed(path, i);
            if (!node.IsMap()) fail(node.Mark(), vpath, "expected a map, got " + kind_of(node));
            const auto f = fields_of(node, vpath, {"name", "credentials", "services"});
            VaultConfig vault;

            const auto* name = find(f, "name");
            if (!name) fail(node.Mark(), vpath, "missing required key 'name'");
            const auto npath = child(vpath, "name");
            vault.name = string_value(*name, npath);
            require_name(vault.name, "vault", where(*name), npath);
            if (auto [it, inserted] = seen.emplace(vault.name, vpath); !inserted)
                fail(where(*name), npath, "duplicate vault name " + shown(vault.name) + " (also " + it->second + ")");

            if (auto* c = find(f, "credentials")) {
                const auto cpath = child(vpath, "credentials");
                for (const auto& cred : entries(*c, cpath)) {
                    require_name(cred.key, "credential", cred.key_node.Mark(), cpath);
                    vault.credentials.emplace(cred.key, parse_credential(cred, child(cpath, cred.key)));
                }
            }
            if (auto* s = find(f, "services")) {
                const auto spath = child(vpath, "services");
                const auto services = list_value(*s, spath);
                for (std::size_t j = 0; j < services.size(); ++j) {
                    const auto one = indexed(spath, j);
                    auto svc = parse_service(services[j], one, vault);
                    if (auto refusal = check_service_binding(svc.host, svc.port, own_listeners(cfg)))
                        fail(services[j]["host"].Mark(), child(one, "host"), refusal->message);
                    // Only the first of two identical bindings could ever apply.
                    for (std::size_t k = 0; k < vault.services.size(); ++k) {
                        const auto& other = vault.services[k];
                        if (other.same_binding(svc))
                            fail(services[j].Mark(), one, "same host, port and path_prefix as " + indexed(spath, k));
                    }
                    vault.services.push_back(std::move(svc));
                }
            }
            cfg.vaults.push_back(std::move(vault));
        }
    }

    void parse_policies(const Entry& e, Config& cfg) {
        const std::string path = "egress_policies";
        for (const auto& p : entries(e, path)) {
            require_name(p.key, "policy", p.key_node.Mark(), path);
            const auto ppath = child(path, p.key);
            const auto f = section(p, ppath, validation::policy_keys);
            EgressPolicy policy;
            policy.name = p.key;
            if (auto* x = find(f, "allow_https")) policy.allow_https = bool_value(*x, child(ppath, "allow_https"));
            if (auto* x = find(f, "allow_http")) policy.allow_http = bool_value(*x, child(ppath, "allow_http"));
            if (auto* x = find(f, "allow_package_managers"))
                policy.allow_package_managers = bool_value(*x, child(ppath, "allow_package_managers"));
            if (auto* x = find(f, "tunnel_sni_check"))
                policy.tunnel_sni_check = bool_value(*x, child(ppath, "tunnel_sni_check"));
            if (auto* x = find(f, "allowed_domains")) {
                const auto dpath = child(ppath, "allowed_domains");
                const auto items = list_value(*x, dpath);
                for (std::size_t i = 0; i < items.size(); ++i) {
                    const auto ipath = indexed(dpath, i);
                    if (!items[i].IsScalar())
                        fail(items[i].Mark(), ipath, "expected a string, got " + kind_of(items[i]));
                    std::string why;
                    auto rule = DomainRule::parse(items[i].Scalar(), &why);
                    if (!rule)
                        fail(items[i].Mark(), ipath,
                             "invalid domain rule " + shown(items[i].Scalar()) + (why.empty() ? "" : ": " + why));
                    policy.allowed_domains.push_back(std::move(*rule));
                }
            }
            if (auto* x = find(f, "allowed_cidrs")) {
                const auto cpath = child(ppath, "allowed_cidrs");
                const auto items = list_value(*x, cpath);
                for (std::size_t i = 0; i < items.size(); ++i) {
                    const auto ipath = indexed(cpath, i);
                    if (!items[i].IsScalar())
                        fail(items[i].Mark(), ipath, "expected a string, got " + kind_of(items[i]));
                    auto cidr = parse_cidr(items[i].Scalar());
                    if (!cidr)
                        fail(items[i].Mark(), ipath,
                             "expected an IP address or CIDR like 10.0.0.0/8 or fd00::/8, got " +
                                 shown(items[i].Scalar()));
                    policy.allowed_cidrs.push_back(*cidr);
                }
            }
            cfg.egress_policies.emplace(p.key, std::move(policy));
        }
    }

    void parse_sessions(const Entry& e, Config& cfg) {
        const std::string path = "sessions";
        for (const auto& s : entries(e, path)) {
            require_name(s.key, "session", s.key_node.Mark(), path);
            const auto spath = child(path, s.key);
            const auto f = section(s, spath, {"vaults", "egress_policy"});
            SessionConfig session;
            if (auto* v = find(f, "vaults")) {
                const auto vpath = child(spath, "vaults");
                const auto items = list_value(*v, vpath);
                for (std::size_t i = 0; i < items.size(); ++i) {
                    const auto ipath = indexed(vpath, i);
                    if (!items[i].IsScalar())
                        fail(items[i].Mark(), ipath, "expected a vault name, got " + kind_of(items[i]));
                    const auto& name = items[i].Scalar();
                    bool exists = false;
                    for (const auto& vault : cfg.vaults) exists = exists || vault.name == name;
                    if (!exists) {
                        std::vector<std::string> names;
                        for (const auto& vault : cfg.vaults) names.push_back(vault.name);
                        fail(items[i].Mark(), ipath,
                             "unknown vault " + shown(name) +
                                 (names.empty() ? std::string(" (no vaults are defined)")
                                                : " (vaults: " + joined(names) + ")"));
                    }
                    for (const auto& earlier : session.vaults) {
                        if (earlier == name) fail(items[i].Mark(), ipath, "vault " + shown(name) + " is listed twice");
                        // The most specific binding wins; two equal ones would leave it to list order.
                        if (auto tie = tied_services(cfg.vaults, earlier, name))
                            fail(items[i].Mark(), ipath,
                                 "session " + shown(s.key) + ": " + tie->first + " (vault " + shown(earlier) +
                                     ") and " + tie->second + " (vault " + shown(name) + ") both bind " + tie->what +
                                     "; change one path_prefix, or use the vaults in different sessions");
                    }
                    session.vaults.push_back(name);
                }
            }
            std::vector<std::string> policies;
            for (const auto& [n, _] : cfg.egress_policies) policies.push_back(n);
            const auto known = policies.empty() ? std::string(" (no egress_policies are defined)")
                                                : " (egress_policies: " + joined(policies) + ")";
            if (auto* p = find(f, "egress_policy")) {
                const auto ppath = child(spath, "egress_policy");
                session.egress_policy = string_value(*p, ppath);
                if (!cfg.egress_policies.count(session.egress_policy))
                    fail(where(*p), ppath, "unknown egress policy " + shown(session.egress_policy) + known);
            } else if (!cfg.egress_policies.count(session.egress_policy)) {
                fail(where(s), spath,
                     "no egress_policy given and there is no policy named '" + session.egress_policy + "'" + known);
            }
            cfg.sessions.emplace(s.key, std::move(session));
        }
    }

    std::string source_;
};

// Records, per document, whether it was nothing but one null and where.
class DocumentCounter : public YAML::EventHandler {
public:
    struct Doc {
        YAML::Mark start;
        YAML::Mark null_at;
        int events = 0;
        bool only_null = false;
    };
    Doc current;
    // The first string (key, value or tag) holding a NUL byte, which "\0" and
    // "\x00" put there: the paths, names and headers it ends up in would be
    // cut short at it by the C APIs that take them.
    std::optional<YAML::Mark> nul_at;

    void OnDocumentStart(const YAML::Mark& m) override { current = Doc{m, YAML::Mark::null_mark(), 0, false}; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& m, YAML::anchor_t) override {
        if (current.events++ == 0) {
            current.only_null = true;
            current.null_at = m;
        }
    }
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { seen(); }
    void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, const std::string& value) override {
        seen();
        check_nul(m, tag);
        check_nul(m, value);
    }
    void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
        seen();
        check_nul(m, tag);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t, YAML::EmitterStyle::value) override {
        seen();
        check_nul(m, tag);
    }
    void OnMapEnd() override {}

private:
    void seen() {
        ++current.events;
        current.only_null = false;
    }
    void check_nul(const YAML::Mark& m, const std::string& text) {
        if (!nul_at && text.find('\0') != std::string::npos) nul_at = m;
    }
};

// A NUL byte written raw into the file, which yaml-cpp would not refuse.
void check_no_raw_nul(const std::string& text, const Parser& parser) {
    const auto nul = text.find('\0');
    if (nul == std::string::npos) return;
    YAML::Mark at;
    at.pos = static_cast<int>(nul);
    const auto line_start = text.rfind('\n', nul);
    at.line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
    at.column = static_cast<int>(line_start == std::string::npos ? nul : nul - line_start - 1);
    parser.fail(at, "", "the file holds a NUL byte; no setting may contain one");
}

// One document per file. yaml-cpp 0.7 has a parser bug: a token no rule
// consumes (a ',' outside a flow collection) yields an empty document without
// advancing, forever. Two null-only documents at the same position are that
// bug, reported here as the syntax error it is; the number of documents read
// is bounded, so the loop cannot run away. The same pass finds the first
// string holding a NUL byte.
void check_single_document(const std::string& text, const Parser& parser) {
    std::istringstream in(text);
    YAML::Parser yaml(in);
    DocumentCounter counter;
    std::vector<DocumentCounter::Doc> docs;
    while (docs.size() < 3 && yaml.HandleNextDocument(counter)) {
        docs.push_back(counter.current);
        const auto n = docs.size();
        if (n < 2) continue;
        const auto& prev = docs[n - 2];
        const auto& doc = docs[n - 1];
        if (prev.only_null && doc.only_null && prev.null_at.pos == doc.null_at.pos) {
            const auto pos = static_cast<std::size_t>(doc.null_at.pos);
            const std::string what = pos < text.size() ? " " + shown(text.substr(pos, 1)) : std::string();
            parser.fail(doc.null_at, "", "YAML syntax error: unexpected character" + what);
        }
        // A second document that is one null may still be the stuck parser;
        // one more read tells.
        if (!doc.only_null || n == 3) parser.fail(docs[1].start, "", "only one YAML document is allowed");
    }
    if (docs.size() == 2) parser.fail(docs[1].start, "", "only one YAML document is allowed");
    if (counter.nul_at)
        parser.fail(*counter.nul_at, "", "a key or value holds a NUL byte (\\0 or \\x00); no setting may contain one");
}

}  // namespace

std::string ListenAddress::to_string() const {
    if (is_unix()) return "unix:" + unix_path;
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

bool ServiceConfig::matches(std::string_view normalised_host, std::uint16_t p) const {
    if (p != port) return false;
    if (!host.starts_with("*.")) return normalised_host == host;
    // "*.example.com" covers "a.example.com" and "a.b.example.com", never
    // "example.com" itself nor "badexample.com".
    const std::string_view suffix = std::string_view(host).substr(1);  // ".example.com"
    return normalised_host.size() > suffix.size() && normalised_host.ends_with(suffix);
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    // 12 digits times an hour still fits in the 64-bit count.
    if (digits == 0 || digits > 12) return std::nullopt;
    std::int64_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) value = value * 10 + (text[i] - '0');
    const auto unit = text.substr(digits);
    std::int64_t scale = 0;
    if (unit == "ms")
        scale = 1;
    else if (unit == "s")
        scale = 1000;
    else if (unit == "m")
        scale = 60 * 1000;
    else if (unit == "h")
        scale = 60 * 60 * 1000;
    else
        return std::nullopt;
    return std::chrono::milliseconds(value * scale);
}

Config parse_config(const std::string& yaml_text, const std::string& source_name) {
    Parser parser(source_name);
    Node root;
    try {
        // Counted first: the count also catches the inputs yaml-cpp accepts as
        // an empty document (a stray ',') and that LoadAll would loop on.
        check_no_raw_nul(yaml_text, parser);
        check_single_document(yaml_text, parser);
        root = YAML::Load(yaml_text);
    } catch (const YAML::ParserException& e) {
        parser.fail(e.mark, "", "YAML syntax error: " + e.msg);
    } catch (const YAML::Exception& e) {
        parser.fail(e.mark, "", "cannot parse YAML: " + e.msg);
    }
    try {
        return parser.parse(root);
    } catch (const YAML::Exception& e) {
        // Not expected: the parser checks types before it reads values.
        parser.fail(e.mark, "", "cannot read YAML: " + e.msg);
    }
}

Config load_config_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
    std::string text;
    char buf[8192];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_config_bytes)
            throw ConfigError(path + ": config file is larger than " + std::to_string(max_config_bytes) + " bytes");
    }
    if (in.bad()) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
    return parse_config(text, path);
}

unsigned auto_worker_threads(unsigned cores) { return cores > 0 ? cores : 1; }

}  // namespace vaultgate
