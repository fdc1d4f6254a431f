// The admin API: routing, validation, and the save-then-publish cycle behind
// every change. Credential values enter only through request bodies and leave
// only into a Secret; every message in a response is fixed text or a name that
// passed validation, never a piece of a body that failed it.
#include "vaultgate/admin/admin_api.hpp"

#include "vaultgate/util/json_wipe.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/config/service_binding.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/crypto/ids.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

namespace vaultgate {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using sys_clock = std::chrono::system_clock;

// Request bodies are a few levels deep at most (a session's inline policy);
// the cap keeps deeply nested input from costing recursion anywhere.
constexpr std::size_t max_body_depth = 16;
constexpr std::size_t default_log_limit = 100;
constexpr std::size_t max_log_limit = 10000;
constexpr std::chrono::seconds default_ttl{3600};
constexpr std::string_view no_proxy_hosts = "localhost,127.0.0.1,::1";
constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4";

// A request that cannot be served. Thrown from deep inside validation and
// turned into one error response at the top of handle(), so that each check
// stays one line.
struct ApiError {
    int status = 400;
    std::string code;
    std::string message;
    std::string allow;  // for 405
};

[[noreturn]] void fail(int status, std::string code, std::string message) {
    throw ApiError{status, std::move(code), std::move(message), {}};
}

// --- responses ------------------------------------------------------------------

AdminResponse json_response(int status, const ordered_json& body) {
    AdminResponse r;
    r.status = status;
    // Names are validated ASCII; `replace` keeps a stray byte from throwing here.
    r.body = body.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
    return r;
}

AdminResponse error_response(int status, std::string_view code, std::string_view message) {
    ordered_json error;
    error["code"] = code;
    error["message"] = message;
    ordered_json body;
    body["error"] = std::move(error);
    return json_response(status, body);
}

AdminResponse no_content() {
    AdminResponse r;
    r.status = 204;
    r.content_type.clear();
    return r;
}

// --- time -------------------------------------------------------------------------

std::int64_t to_ms(sys_clock::time_point tp) {
    return std::chrono::floor<std::chrono::milliseconds>(tp.time_since_epoch()).count();
}

sys_clock::time_point from_ms(std::int64_t ms) {
    return sys_clock::time_point(std::chrono::duration_cast<sys_clock::duration>(std::chrono::milliseconds(ms)));
}

// RFC 3339 in UTC; milliseconds only when there are some, so whole-second
// instants such as expires_at read plainly.
std::string rfc3339(std::int64_t ms) {
    std::int64_t secs = ms / 1000;
    std::int64_t rem = ms % 1000;
    if (rem < 0) {
        rem += 1000;
        --secs;
    }
    const auto t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string out(buf, n);
    if (rem != 0) {
        char frac[8];
        std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(rem));
        out += frac;
    }
    out += 'Z';
    return out;
}

// --- request bodies -----------------------------------------------------------------

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

// A parsed request body that wipes its strings when it goes out of scope,
// whichever way the handler leaves. The parser's own scratch buffer is beyond
// reach; the caller wipes the request's body string.
class ParsedBody {
public:
    explicit ParsedBody(const std::string& text) {
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
    ~ParsedBody() { wipe_json_strings(root_); }
    ParsedBody(const ParsedBody&) = delete;
    ParsedBody& operator=(const ParsedBody&) = delete;

    const json& root() const { return root_; }

private:
    json root_;
};

// A key is quoted back only when it looks like a misspelt field name, so that
// a pasted secret used as a key does not come back in the error.
std::string describe_unknown_key(std::string_view key) {
    bool plain = !key.empty() && key.size() <= 24;
    for (const char c : key) plain = plain && ((c >= 'a' && c <= 'z') || c == '_');
    return plain ? "unknown key '" + std::string(key) + "'" : std::string("an unknown key");
}

void require_keys(const json& object, std::initializer_list<std::string_view> allowed) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
        std::string list;
        for (const auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(400, "invalid_request", describe_unknown_key(it.key()) + " (allowed: " + list + ")");
    }
}

// A key whose value is null counts as absent.
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

// Names follow the config file's rule (validation::check_name), so a vault or
// credential can move between the two.
void check_name(std::string_view name, std::string_view kind) {
    if (auto why = validation::check_name(name, kind)) fail(400, "invalid_name", "name: " + *why);
}

// The rule the config loader and the bootstrapper apply too.
void check_value(std::string_view value) {
    if (auto why = validation::check_credential_value(value)) fail(400, "invalid_value", "value: " + *why);
}

// --- paths --------------------------------------------------------------------------

// "/v1/vaults/x" -> {"v1", "vaults", "x"}; nullopt for anything with an empty
// segment (a trailing or doubled slash), which no endpoint has.
std::optional<std::vector<std::string_view>> split_path(std::string_view path) {
    path = path.substr(0, path.find_first_of("?#"));
    if (path.size() < 2 || path.front() != '/') return std::nullopt;
    std::vector<std::string_view> segments;
    std::size_t start = 1;
    for (;;) {
        const auto end = path.find('/', start);
        const auto segment = path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (segment.empty()) return std::nullopt;
        segments.push_back(segment);
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return segments;
}

void require_method(const AdminRequest& req, std::initializer_list<std::string_view> allowed) {
    if (std::find(allowed.begin(), allowed.end(), req.method) != allowed.end()) return;
    std::string list;
    for (const auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw ApiError{405, "method_not_allowed", "this path accepts " + list, list};
}

// --- sessions -----------------------------------------------------------------------

// What a session gets when it names no policy and the config has no "default":
// nothing leaves except through its bound services.
EgressPolicy deny_all_policy() {
    EgressPolicy p;
    p.allow_https = false;
    p.allow_http = false;
    p.allow_package_managers = false;
    return p;
}

// An inline policy (no name) is the session's own. A named one is looked up in
// the running config, so a reload that tightens it applies to live sessions;
// one the config dropped allows nothing rather than what it used to.
EgressPolicy effective_policy(const EgressPolicy& stored, const Config& config) {
    if (stored.name.empty()) return stored;
    if (const auto it = config.egress_policies.find(stored.name); it != config.egress_policies.end()) {
        EgressPolicy p = it->second;
        p.name = stored.name;
        return p;
    }
    EgressPolicy p = deny_all_policy();
    p.name = stored.name;
    return p;
}

// "http://127.0.0.1:3128" -> "http://<id>:<token>@127.0.0.1:3128". The id and
// token are from URL-safe alphabets, so they need no escaping.
std::string session_proxy_url(std::string_view base, std::string_view id, std::string_view token) {
    std::string_view scheme = "http";
    if (const auto pos = base.find("://"); pos != std::string_view::npos) {
        scheme = base.substr(0, pos);
        base.remove_prefix(pos + 3);
    }
    // Userinfo in the configured URL would make two sets of credentials.
    if (const auto at = base.substr(0, base.find('/')).rfind('@'); at != std::string_view::npos)
        base.remove_prefix(at + 1);
    std::string url;
    url.reserve(scheme.size() + 3 + id.size() + 1 + token.size() + 1 + base.size());
    url.append(scheme).append("://").append(id).append(":").append(token).append("@").append(base);
    return url;
}

ordered_json service_json(const std::string& id, const ServiceConfig& config) {
    ordered_json j;
    j["id"] = id;
    // Held in a local: a range-for over items() of a temporary would dangle.
    const json fields = service_to_json(config);
    for (const auto& item : fields.items()) j[item.key()] = ordered_json(item.value());
    return j;
}

// The network layer's callback runs outside the lock; a failure in it must
// not turn a completed change into an error answer.
void notify_closed(const std::function<void(const std::string&)>& callback, const std::vector<std::string>& ids) {
    if (!callback) return;
    for (const auto& id : ids) {
        try {
            callback(id);
        } catch (...) {
            log_error("admin API: closing the connections of session " + id + " failed");
        }
    }
}

std::string source_prefix(const Config& config) {
    return config.source_path.empty() ? std::string() : config.source_path + ": ";
}

}  // namespace

std::shared_ptr<const GatewayState> compose_state(const GatewayState& config_state, const Config& config,
                                                  const StoreData& data, sys_clock::time_point now,
                                                  const GatewayState* previous, std::vector<std::string>* warnings) {
    auto state = std::make_shared<GatewayState>();
    state->vaults = config_state.vaults;
    state->sessions = config_state.sessions;
    state->default_session = config_state.default_session;

    std::map<std::string, std::string, std::less<>> api_vault_names;  // id -> name
    for (const auto& stored : data.vaults) {
        // load() and reload refuse such a clash; data that did not pass through
        // them must still never shadow a config vault, which is code.
        if (state->vaults.count(stored.name)) continue;
        Vault vault;
        vault.id = stored.id;
        vault.name = stored.name;
        vault.from_config = false;
        for (const auto& c : stored.credentials)
            if (!c.value.empty()) vault.credentials.emplace(c.name, c.value);
        for (const auto& s : stored.services) vault.services.push_back(ServiceBinding{s.id, s.config, nullptr});
        const Vault* before = nullptr;
        if (previous) {
            const auto it = previous->vaults.find(stored.name);
            if (it != previous->vaults.end() && it->second.id == stored.id) before = &it->second;
        }
        prepare_redaction(vault, warnings, before);
        api_vault_names.emplace(stored.id, stored.name);
        state->vaults.emplace(stored.name, std::move(vault));
    }

    const std::int64_t now_ms = to_ms(now);
    for (const auto& stored : data.sessions) {
        if (stored.expires_at_ms <= now_ms) continue;
        Session session;
        session.id = stored.id;
        session.token_digest = stored.token_digest;
        session.expires_at = from_ms(stored.expires_at_ms);
        session.source = stored.source;
        session.policy = effective_policy(stored.policy, config);
        // Only ids of API vaults, and names of config vaults, are followed: an
        // API vault that later takes a departed config vault's name does not
        // inherit its sessions.
        for (const auto& id : stored.vault_ids) {
            if (const auto it = api_vault_names.find(id); it != api_vault_names.end()) {
                session.vault_names.push_back(it->second);
            } else if (const auto cv = config_state.vaults.find(id);
                       cv != config_state.vaults.end() && cv->second.from_config) {
                session.vault_names.push_back(id);
            }
        }
        // A config session of the same id keeps its place; API ids are random.
        state->sessions.emplace(stored.id, std::move(session));
    }
    return state;
}

class AdminApi::Impl {
public:
    void set_proxy_url(std::string url) {
        std::lock_guard lock(mutex_);
        options_.proxy_url = std::move(url);
    }

    Impl(Config config, std::unique_ptr<VaultStore> store, Secret master_key, AdminOptions options,
         std::function<void(std::shared_ptr<const GatewayState>)> publish, AccessLog* log, Metrics* metrics,
         std::function<MetricsExtras()> metrics_extras)
        : config_(std::move(config)),
          store_(std::move(store)),
          master_key_(std::move(master_key)),
          options_(std::move(options)),
          publish_(std::move(publish)),
          log_(log),
          metrics_(metrics),
          metrics_extras_(std::move(metrics_extras)),
          config_state_(std::make_shared<GatewayState>()) {}

    void load() {
        // Startup, once: holding the lock while reading is harmless here and
        // keeps a racing reload from swapping config_ underneath.
        std::lock_guard lock(mutex_);
        StoreData data = store_->load();
        auto config_state = build_config_state(config_);
        check_vault_names(config_, data);
        // Stored before such ties were refused: requests they match are refused
        // (binding_conflict) until the session or a binding goes.
        if (auto tie = first_binding_tie(*config_state, config_, data))
            log_warn("admin API: " + *tie + "; requests that match both are refused");
        data_ = std::move(data);
        config_state_ = std::move(config_state);
        config_loaded_ms_ = to_ms(sys_clock::now());
        loaded_ = true;
        publish_locked(sys_clock::now());
    }

    void reload(Config config) {
        // Credential files are read before taking the lock: a slow disk must
        // not hold up the API.
        auto config_state = build_config_state(config);
        std::lock_guard lock(mutex_);
        check_vault_names(config, data_);
        if (loaded_)
            if (auto tie = first_binding_tie(*config_state, config, data_))
                throw ConfigError(source_prefix(config) + *tie + "; the config is not reloaded");
        config_ = std::move(config);
        config_state_ = std::move(config_state);
        config_loaded_ms_ = to_ms(sys_clock::now());
        if (loaded_) publish_locked(sys_clock::now());
    }

    std::vector<std::string> expire(sys_clock::time_point now) {
        std::lock_guard lock(mutex_);
        std::vector<std::string> expired;
        if (!loaded_) return expired;
        const std::int64_t now_ms = to_ms(now);
        for (const auto& s : data_.sessions)
            if (s.expires_at_ms <= now_ms) expired.push_back(s.id);
        // The common tick finds nothing, and copies nothing.
        if (expired.empty()) return expired;
        StoreData next = data_;
        std::erase_if(next.sessions, [&](const StoredSession& s) { return s.expires_at_ms <= now_ms; });
        next.generation = data_.generation + 1;
        try {
            store_->save(next);
        } catch (const StoreError& e) {
            // The sessions are over either way: compose_state leaves expired
            // sessions out, also after a restart, and the next successful save
            // drops them from the file.
            log_error(std::string("admin API: expired sessions stay in the store until the next save: ") + e.what());
        }
        data_ = std::move(next);
        publish_locked(now);
        return expired;
    }

    AdminResponse handle(const AdminRequest& req, std::vector<std::string>& closed) {
        try {
            return dispatch(req, closed);
        } catch (const ApiError& e) {
            AdminResponse r = error_response(e.status, e.code, e.message);
            if (!e.allow.empty()) r.headers.emplace_back("Allow", e.allow);
            return r;
        } catch (...) {
            // The exception's text may hold anything; the operator gets the
            // fact, the client a bare 500.
            log_error("admin API: internal error while handling " + req.method + " request");
            return error_response(500, "internal_error", "internal error");
        }
    }

private:
    AdminResponse dispatch(const AdminRequest& req, std::vector<std::string>& closed) {
        if (req.body.size() > options_.max_body)
            fail(413, "body_too_large", "the body is larger than " + std::to_string(options_.max_body) + " bytes");
        const auto parsed = split_path(req.path);
        if (!parsed) fail(404, "not_found", "no such endpoint");
        const auto& seg = *parsed;
        const std::size_t n = seg.size();

        if (n == 1 && seg[0] == "healthz") {
            require_method(req, {"GET"});
            ordered_json body;
            body["status"] = "ok";
            return json_response(200, body);
        }
        if (n == 1 && seg[0] == "metrics") {
            require_method(req, {"GET"});
            return render_metrics();
        }
        if (n < 2 || seg[0] != "v1") fail(404, "not_found", "no such endpoint");

        const auto route = [&]() -> std::optional<AdminResponse> {
            if (seg[1] == "vaults") {
                if (n == 2) {
                    require_method(req, {"GET", "POST"});
                    return req.method == "GET" ? list_vaults() : create_vault(req);
                }
                if (n == 3) {
                    require_method(req, {"GET"});
                    return get_vault(seg[2]);
                }
                if (seg[3] == "credentials" && n == 4) {
                    require_method(req, {"POST"});
                    return create_credential(seg[2], req);
                }
                if (seg[3] == "credentials" && n == 5) {
                    require_method(req, {"PUT", "DELETE"});
                    return req.method == "PUT" ? rotate_credential(seg[2], seg[4], req)
                                               : delete_credential(seg[2], seg[4]);
                }
                if (seg[3] == "services" && n == 4) {
                    require_method(req, {"POST"});
                    return create_service(seg[2], req);
                }
                if (seg[3] == "services" && n == 5) {
                    require_method(req, {"DELETE"});
                    return delete_service(seg[2], seg[4]);
                }
            } else if (seg[1] == "sessions") {
                if (n == 2) {
                    require_method(req, {"POST"});
                    return create_session(req);
                }
                if (n == 3) {
                    require_method(req, {"DELETE"});
                    return delete_session(seg[2], closed);
                }
            } else if (seg[1] == "logs" && n == 2) {
                require_method(req, {"GET"});
                return recent_logs(req);
            }
            return std::nullopt;
        };

        std::lock_guard lock(mutex_);
        // Before the store is loaded, a write would replace it with empty data.
        if (!loaded_) fail(503, "not_ready", "the store is not loaded yet");
        if (auto response = route()) return std::move(*response);
        fail(404, "not_found", "no such endpoint");
    }

    // --- vaults ---

    struct VaultRef {
        const StoredVault* api = nullptr;
        std::size_t index = 0;               // into data_.vaults when api is set
        const VaultConfig* config = nullptr;
    };

    // An API vault by id, else a config vault by name (its id).
    std::optional<VaultRef> find_vault(std::string_view id) const {
        for (std::size_t i = 0; i < data_.vaults.size(); ++i)
            if (data_.vaults[i].id == id) return VaultRef{&data_.vaults[i], i, nullptr};
        for (const auto& vc : config_.vaults)
            if (vc.name == id) return VaultRef{nullptr, 0, &vc};
        return std::nullopt;
    }

    // The index of an API vault that may be changed; config vaults are code.
    std::size_t writable_vault(std::string_view id) const {
        const auto ref = find_vault(id);
        if (!ref) fail(404, "vault_not_found", "no vault with this id");
        if (ref->config)
            fail(409, "read_only",
                 "vault '" + ref->config->name + "' is defined in the config file; change it there");
        return ref->index;
    }

    bool vault_name_taken(std::string_view name) const {
        for (const auto& vc : config_.vaults)
            if (vc.name == name) return true;
        for (const auto& v : data_.vaults)
            if (v.name == name) return true;
        return false;
    }

    ordered_json api_vault_json(const StoredVault& v) const {
        ordered_json j;
        j["id"] = v.id;
        j["name"] = v.name;
        j["source"] = "api";
        j["created_at"] = rfc3339(v.created_at_ms);
        ordered_json credentials = ordered_json::array();
        for (const auto& c : v.credentials) {
            ordered_json cj;
            cj["name"] = c.name;
            cj["version"] = c.version;
            cj["fingerprint"] = credential_fingerprint(master_key_, c.value.reveal());
            cj["updated_at"] = rfc3339(c.updated_at_ms);
            credentials.push_back(std::move(cj));
        }
        j["credentials"] = std::move(credentials);
        ordered_json services = ordered_json::array();
        for (const auto& s : v.services) services.push_back(service_json(s.id, s.config));
        j["services"] = std::move(services);
        return j;
    }

    // Config credentials have no history: version 1, as of the last (re)load.
    ordered_json config_vault_json(const VaultConfig& vc) const {
        const auto built = config_state_->vaults.find(vc.name);
        const Vault* vault = built == config_state_->vaults.end() ? nullptr : &built->second;
        ordered_json j;
        j["id"] = vc.name;
        j["name"] = vc.name;
        j["source"] = "config";
        ordered_json credentials = ordered_json::array();
        for (const auto& [name, source] : vc.credentials) {
            ordered_json cj;
            cj["name"] = name;
            cj["version"] = 1;
            const Secret* secret = nullptr;
            if (vault)
                if (const auto it = vault->credentials.find(name); it != vault->credentials.end()) secret = &it->second;
            if (secret)
                cj["fingerprint"] = credential_fingerprint(master_key_, secret->reveal());
            else
                cj["missing"] = true;
            cj["updated_at"] = rfc3339(config_loaded_ms_);
            credentials.push_back(std::move(cj));
        }
        j["credentials"] = std::move(credentials);
        ordered_json services = ordered_json::array();
        if (vault)
            for (const auto& s : vault->services) services.push_back(service_json(s.id, s.config));
        j["services"] = std::move(services);
        return j;
    }

    AdminResponse list_vaults() const {
        ordered_json vaults = ordered_json::array();
        for (const auto& vc : config_.vaults) vaults.push_back(config_vault_json(vc));
        for (const auto& v : data_.vaults) vaults.push_back(api_vault_json(v));
        ordered_json body;
        body["vaults"] = std::move(vaults);
        return json_response(200, body);
    }

    AdminResponse get_vault(std::string_view id) const {
        const auto ref = find_vault(id);
        if (!ref) fail(404, "vault_not_found", "no vault with this id");
        return json_response(200, ref->api ? api_vault_json(*ref->api) : config_vault_json(*ref->config));
    }

    AdminResponse create_vault(const AdminRequest& req) {
        ParsedBody body(req.body);
        require_keys(body.root(), {"name"});
        const std::string name = required_string(body.root(), "name");
        check_name(name, "vault");
        if (vault_name_taken(name)) fail(409, "name_taken", "a vault named '" + name + "' already exists");

        StoreData next = data_;
        StoredVault vault;
        vault.id = random_id("vlt_");
        vault.name = name;
        vault.created_at_ms = to_ms(sys_clock::now());
        next.vaults.push_back(vault);
        commit(std::move(next));

        ordered_json out;
        out["id"] = vault.id;
        out["name"] = vault.name;
        return json_response(201, out);
    }

    // --- credentials ---

    AdminResponse create_credential(std::string_view vault_id, const AdminRequest& req) {
        const std::size_t index = writable_vault(vault_id);
        ParsedBody body(req.body);
        require_keys(body.root(), {"name", "value"});
        const std::string name = required_string(body.root(), "name");
        check_name(name, "credential");
        const std::string& value = required_string(body.root(), "value");
        check_value(value);
        for (const auto& c : data_.vaults[index].credentials)
            if (c.name == name)
                fail(409, "credential_exists", "credential '" + name + "' exists; rotate it with PUT");

        const std::int64_t now_ms = to_ms(sys_clock::now());
        StoreData next = data_;
        StoredCredential credential;
        credential.name = name;
        credential.value = Secret(std::string(value));  // the temporary is wiped by Secret
        credential.version = 1;
        credential.updated_at_ms = now_ms;
        next.vaults[index].credentials.push_back(std::move(credential));
        commit(std::move(next));

        ordered_json out;
        out["name"] = name;
        out["version"] = 1;
        return json_response(201, out);
    }

    std::size_t credential_index(const StoredVault& vault, std::string_view name) const {
        for (std::size_t i = 0; i < vault.credentials.size(); ++i)
            if (vault.credentials[i].name == name) return i;
        fail(404, "credential_not_found", "the vault has no credential of this name");
    }

    AdminResponse rotate_credential(std::string_view vault_id, std::string_view name, const AdminRequest& req) {
        const std::size_t index = writable_vault(vault_id);
        const std::size_t ci = credential_index(data_.vaults[index], name);
        ParsedBody body(req.body);
        require_keys(body.root(), {"value"});
        const std::string& value = required_string(body.root(), "value");
        check_value(value);

        StoreData next = data_;
        StoredCredential& credential = next.vaults[index].credentials[ci];
        credential.value = Secret(std::string(value));
        credential.version += 1;
        credential.updated_at_ms = to_ms(sys_clock::now());
        const std::uint64_t version = credential.version;
        const std::string credential_name = credential.name;
        // Saved and published before the answer: the next proxied request
        // uses the new value.
        commit(std::move(next));

        ordered_json out;
        out["name"] = credential_name;
        out["version"] = version;
        return json_response(200, out);
    }

    AdminResponse delete_credential(std::string_view vault_id, std::string_view name) {
        const std::size_t index = writable_vault(vault_id);
        const StoredVault& vault = data_.vaults[index];
        const std::size_t ci = credential_index(vault, name);
        // A service left without its credential would answer 503 to every
        // request; the caller removes the binding first, on purpose.
        for (const auto& s : vault.services)
            if (s.config.auth.key == name)
                fail(409, "credential_in_use", "service " + s.id + " injects this credential; delete the service first");

        StoreData next = data_;
        auto& credentials = next.vaults[index].credentials;
        credentials.erase(credentials.begin() + static_cast<std::ptrdiff_t>(ci));
        commit(std::move(next));
        return no_content();
    }

    // --- services ---

    AdminResponse create_service(std::string_view vault_id, const AdminRequest& req) {
        const std::size_t index = writable_vault(vault_id);
        ParsedBody body(req.body);
        std::string why;
        // The same rules as a config-file service; its messages never quote values.
        auto config = service_from_json(body.root(), &why);
        if (!config) fail(400, "invalid_service", why);
        if (auto refusal = check_service_binding(config->host, config->port, own_listeners(config_)))
            fail(400, refusal->code, "host: " + refusal->message);
        const auto& credentials = data_.vaults[index].credentials;
        const bool known = std::any_of(credentials.begin(), credentials.end(),
                                       [&](const StoredCredential& c) { return c.name == config->auth.key; });
        if (!known)
            fail(400, "unknown_credential",
                 "auth_config.key: the vault has no credential of that name; create it first");

        for (const auto& other : data_.vaults[index].services)
            if (other.config.same_binding(*config))
                fail(409, "binding_conflict",
                     "service " + other.id + " of this vault already binds the same host, port and path_prefix");

        StoreData next = data_;
        StoredService service;
        service.id = random_id("svc_");
        service.config = std::move(*config);
        next.vaults[index].services.push_back(service);
        const std::string vault_name = data_.vaults[index].name;
        refuse_binding_ties(next, [&](const Session& s) {
            return std::find(s.vault_names.begin(), s.vault_names.end(), vault_name) != s.vault_names.end();
        });
        commit(std::move(next));
        return json_response(201, service_json(service.id, service.config));
    }

    AdminResponse delete_service(std::string_view vault_id, std::string_view service_id) {
        const std::size_t index = writable_vault(vault_id);
        StoreData next = data_;
        auto& services = next.vaults[index].services;
        const auto it = std::find_if(services.begin(), services.end(),
                                     [&](const StoredService& s) { return s.id == service_id; });
        if (it == services.end()) fail(404, "service_not_found", "the vault has no service with this id");
        services.erase(it);
        commit(std::move(next));
        return no_content();
    }

    // --- sessions ---

    std::vector<std::string> session_vault_ids(const json& root) const {
        std::vector<std::string> ids;
        const json* list = optional_field(root, "vault_ids");
        if (!list) return ids;
        if (!list->is_array()) fail(400, "invalid_request", "vault_ids: expected a list of vault ids");
        for (std::size_t i = 0; i < list->size(); ++i) {
            const auto where = "vault_ids[" + std::to_string(i) + "]";
            const json& item = (*list)[i];
            if (!item.is_string()) fail(400, "invalid_request", where + ": expected a string");
            const auto ref = find_vault(item.get_ref<const std::string&>());
            // The id is not quoted back: whatever was pasted there stays out of the answer.
            if (!ref) fail(400, "unknown_vault", where + ": no such vault");
            std::string canonical = ref->api ? ref->api->id : ref->config->name;
            if (std::find(ids.begin(), ids.end(), canonical) == ids.end()) ids.push_back(std::move(canonical));
        }
        return ids;
    }

    EgressPolicy session_policy(const json& root) const {
        const json* p = optional_field(root, "egress_policy");
        if (!p) {
            if (const auto it = config_.egress_policies.find("default"); it != config_.egress_policies.end()) {
                EgressPolicy policy = it->second;
                policy.name = "default";
                return policy;
            }
            return deny_all_policy();
        }
        if (p->is_string()) {
            const auto& name = p->get_ref<const std::string&>();
            const auto it = config_.egress_policies.find(name);
            if (it == config_.egress_policies.end())
                fail(400, "unknown_policy", "egress_policy: the config defines no egress policy of that name");
            EgressPolicy policy = it->second;
            policy.name = name;
            return policy;
        }
        if (p->is_object()) {
            std::string why;
            auto policy = policy_from_json(*p, &why);
            if (!policy) fail(400, "invalid_policy", "egress_policy: " + why);
            policy->name.clear();  // inline: the session's own, never looked up by name
            return std::move(*policy);
        }
        fail(400, "invalid_request", "egress_policy: expected a policy object or the name of a config policy");
    }

    std::chrono::seconds session_ttl(const json& root) const {
        const auto max_ttl = options_.max_ttl;
        const json* t = optional_field(root, "ttl_seconds");
        if (!t) return std::min(std::chrono::seconds(default_ttl), max_ttl);
        const std::string range = "ttl_seconds: expected an integer from 1 to " + std::to_string(max_ttl.count());
        if (!t->is_number_integer()) fail(400, "invalid_ttl", range);
        if (t->is_number_unsigned()) {
            const auto v = t->get<std::uint64_t>();
            if (v < 1 || v > static_cast<std::uint64_t>(max_ttl.count())) fail(400, "invalid_ttl", range);
            return std::chrono::seconds(static_cast<std::int64_t>(v));
        }
        const auto v = t->get<std::int64_t>();
        if (v < 1 || v > max_ttl.count()) fail(400, "invalid_ttl", range);
        return std::chrono::seconds(v);
    }

    std::optional<Cidr> session_source(const json& root) const {
        const json* s = optional_field(root, "source");
        if (!s) return std::nullopt;
        const std::string message = "source: expected an IP address or CIDR such as 10.0.0.0/24";
        if (!s->is_string()) fail(400, "invalid_source", message);
        auto cidr = parse_cidr(s->get_ref<const std::string&>());
        if (!cidr) fail(400, "invalid_source", message);
        return cidr;
    }

    AdminResponse create_session(const AdminRequest& req) {
        ParsedBody body(req.body);
        require_keys(body.root(), {"vault_ids", "egress_policy", "ttl_seconds", "source"});
        StoredSession session;
        session.vault_ids = session_vault_ids(body.root());
        session.policy = session_policy(body.root());
        const auto ttl = session_ttl(body.root());
        session.source = session_source(body.root());

        // Whole seconds, so that the expires_at the client reads is exact; rounded
        // up, so that a session never lives less than the ttl it asked for.
        const auto expires = std::chrono::ceil<std::chrono::seconds>(sys_clock::now()) + ttl;
        session.id = random_id("ses_");
        session.expires_at_ms = to_ms(expires);
        std::string token = random_token();
        session.token_digest = token_digest(token);  // only the digest is kept

        refuse_source_overlap(session);
        StoreData next = data_;
        next.sessions.push_back(session);
        refuse_binding_ties(next, [&](const Session& s) { return s.id == session.id; });
        try {
            commit(std::move(next));
        } catch (...) {
            wipe_string(token);
            throw;
        }

        const std::string base = options_.proxy_url.empty() ? "http://" + config_.listen_proxy.to_string()
                                                            : options_.proxy_url;
        std::string proxy_url = session_proxy_url(base, session.id, token);
        ordered_json env;
        for (const char* name : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}) env[name] = proxy_url;
        env["NO_PROXY"] = no_proxy_hosts;
        env["no_proxy"] = no_proxy_hosts;
        ordered_json out;
        out["id"] = session.id;
        out["token"] = token;
        out["expires_at"] = rfc3339(session.expires_at_ms);
        out["proxy_url"] = proxy_url;
        out["env"] = std::move(env);
        out["ca_cert_pem"] = options_.ca_cert_pem;
        AdminResponse response = json_response(201, out);
        // The response body is now the token's only copy here.
        wipe_json_strings(out);
        wipe_string(proxy_url);
        wipe_string(token);
        return response;
    }

    // A transparent client is given the session with the narrowest source
    // range that holds it; two live sessions with one range could not be told apart.
    void refuse_source_overlap(const StoredSession& session) const {
        if (!session.source) return;
        const std::int64_t now_ms = to_ms(sys_clock::now());
        for (const auto& other : data_.sessions)
            if (other.source && other.expires_at_ms > now_ms && same_source_range(*other.source, *session.source))
                fail(409, "source_conflict",
                     "source: session " + other.id + " is already pinned to this range; pick a narrower or "
                     "another one, or delete that session first");
    }

    // Refuses a change after which one of the `affected` sessions would hold two
    // bindings that no rule of specificity can choose between.
    void refuse_binding_ties(const StoreData& next, const std::function<bool(const Session&)>& affected) const {
        const auto state = compose_state(*config_state_, config_, next, sys_clock::now(), published_.get(), nullptr);
        for (const auto& [id, session] : state->sessions) {
            if (!affected(session)) continue;
            if (auto tie = state->find_binding_tie(session))
                fail(409, "binding_conflict",
                     tie->first + " and " + tie->second +
                         " bind the same host, port and path_prefix for one session; change one path_prefix, "
                         "or use the vaults in different sessions");
        }
    }

    AdminResponse delete_session(std::string_view id, std::vector<std::string>& closed) {
        StoreData next = data_;
        const auto it = std::find_if(next.sessions.begin(), next.sessions.end(),
                                     [&](const StoredSession& s) { return s.id == id; });
        if (it == next.sessions.end()) {
            if (config_.sessions.count(std::string(id)))
                fail(409, "read_only", "session '" + std::string(id) + "' is defined in the config file");
            fail(404, "session_not_found", "no session with this id");
        }
        std::string session_id = it->id;
        next.sessions.erase(it);
        commit(std::move(next));
        closed.push_back(std::move(session_id));
        return no_content();
    }

    // --- logs and metrics ---

    static std::size_t parse_limit(const std::map<std::string, std::string>& query) {
        const auto it = query.find("limit");
        if (it == query.end() || it->second.empty()) return default_log_limit;
        const std::string& text = it->second;
        std::size_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > max_log_limit)
            fail(400, "invalid_query", "limit: expected an integer from 1 to " + std::to_string(max_log_limit));
        return value;
    }

    AdminResponse recent_logs(const AdminRequest& req) const {
        const std::size_t limit = parse_limit(req.query);
        // Entries name vaults; a filter may give the vault's id instead.
        std::set<std::string, std::less<>> vault_names;
        if (const auto it = req.query.find("vault"); it != req.query.end() && !it->second.empty()) {
            vault_names.insert(it->second);
            if (const auto ref = find_vault(it->second); ref && ref->api) vault_names.insert(ref->api->name);
        }
        std::string session;
        if (const auto it = req.query.find("session"); it != req.query.end()) session = it->second;

        std::vector<AccessLogEntry> all;
        if (log_) all = log_->recent(std::numeric_limits<std::size_t>::max());
        std::vector<const AccessLogEntry*> picked;
        for (auto it = all.rbegin(); it != all.rend() && picked.size() < limit; ++it) {
            if (!vault_names.empty() && !vault_names.count(it->vault)) continue;
            if (!session.empty() && it->session != session) continue;
            picked.push_back(&*it);
        }
        ordered_json entries = ordered_json::array();
        // Through the log's own line format, so both read the same.
        for (auto it = picked.rbegin(); it != picked.rend(); ++it)
            entries.push_back(ordered_json::parse(to_json_line(**it)));
        ordered_json body;
        body["entries"] = std::move(entries);
        return json_response(200, body);
    }

    AdminResponse render_metrics() const {
        AdminResponse r;
        r.content_type = metrics_content_type;
        const MetricsExtras extras = metrics_extras_ ? metrics_extras_() : MetricsExtras{};
        if (metrics_) r.body = metrics_->render(extras);
        return r;
    }

    // --- the change cycle ---

    // Saves `next` as a whole, then makes it current and publishes it. A failed
    // save changes nothing in memory, so memory and disk never disagree.
    void commit(StoreData next) {
        next.generation = data_.generation + 1;
        try {
            store_->save(next);
        } catch (const StoreError& e) {
            log_error(std::string("admin API: change not saved: ") + e.what());
            fail(500, "store_write_failed", "the change could not be saved; nothing was changed");
        }
        data_ = std::move(next);
        publish_locked(sys_clock::now());
    }

    void publish_locked(sys_clock::time_point now) {
        if (!publish_) return;
        // Redaction tables of unchanged API services are taken over from the
        // last state; only new or changed ones are built (and warned about).
        std::vector<std::string> warnings;
        auto state = compose_state(*config_state_, config_, data_, now, published_.get(), &warnings);
        for (const auto& w : warnings) log_warn(w);
        published_ = state;
        publish_(std::move(state));
    }

    static std::shared_ptr<const GatewayState> build_config_state(const Config& config) {
        std::vector<std::string> warnings;
        auto state = build_state(config, warnings);
        for (const auto& w : warnings) log_warn(w);
        return state;
    }

    // The first session of the composed state with two bindings that tie, as
    // "session <id>: <binding> and <binding> bind ...".
    static std::optional<std::string> first_binding_tie(const GatewayState& config_state, const Config& config,
                                                        const StoreData& data) {
        const auto state = compose_state(config_state, config, data, sys_clock::now(), nullptr, nullptr);
        for (const auto& [id, session] : state->sessions)
            if (auto tie = state->find_binding_tie(session))
                return "session " + id + ": " + tie->first + " and " + tie->second +
                       " bind the same host, port and path_prefix";
        return std::nullopt;
    }

    // The snapshot is keyed by vault name, so a config vault and an API vault
    // of one name cannot both be served.
    static void check_vault_names(const Config& config, const StoreData& data) {
        for (const auto& vc : config.vaults)
            for (const auto& v : data.vaults)
                if (v.name == vc.name)
                    throw ConfigError(source_prefix(config) + "vaults: '" + vc.name +
                                      "' is already the name of a vault made through the admin API (" + v.id +
                                      "); rename one of them");
    }

    Config config_;
    std::unique_ptr<VaultStore> store_;
    Secret master_key_;
    AdminOptions options_;
    std::function<void(std::shared_ptr<const GatewayState>)> publish_;
    std::shared_ptr<const GatewayState> published_;  // the last state handed to publish_
    AccessLog* log_;
    Metrics* metrics_;
    std::function<MetricsExtras()> metrics_extras_;

    std::mutex mutex_;
    bool loaded_ = false;
    StoreData data_;
    std::shared_ptr<const GatewayState> config_state_;  // the config's vaults and sessions, values read
    std::int64_t config_loaded_ms_ = 0;
};

AdminApi::AdminApi(Config config, std::unique_ptr<VaultStore> store, Secret master_key, AdminOptions options,
                   std::function<void(std::shared_ptr<const GatewayState>)> publish, AccessLog* log, Metrics* metrics,
                   std::function<MetricsExtras()> metrics_extras)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(store), std::move(master_key), std::move(options),
                                   std::move(publish), log, metrics, std::move(metrics_extras))) {}

AdminApi::~AdminApi() = default;

void AdminApi::load() { impl_->load(); }

AdminResponse AdminApi::handle(const AdminRequest& req) {
    std::vector<std::string> closed;
    AdminResponse response = impl_->handle(req, closed);
    notify_closed(on_session_closed, closed);
    return response;
}

std::vector<std::string> AdminApi::expire_sessions(std::chrono::system_clock::time_point now) {
    auto expired = impl_->expire(now);
    notify_closed(on_session_closed, expired);
    return expired;
}

void AdminApi::reload_config(Config config) { impl_->reload(std::move(config)); }

void AdminApi::set_proxy_url(std::string url) { impl_->set_proxy_url(std::move(url)); }

}  // namespace vaultgate
