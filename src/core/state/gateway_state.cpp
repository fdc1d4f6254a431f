// The snapshot the proxy decides with, and the reading of credential values
// that turns a Config into one.
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"  // placeholder_for
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/secret_file.hpp"

#include <cstdlib>
#include <limits>
#include <set>
#include <unordered_map>

namespace vaultgate {

namespace {

// Credentials are API keys and tokens; a cap keeps a wrong path (a log, a
// device) from being read into memory whole. The value itself must then pass
// validation::check_credential_value (16 KiB).
constexpr std::size_t max_credential_file_bytes = 64 * 1024;

std::string source_prefix(const Config& config) {
    return config.source_path.empty() ? std::string() : config.source_path + ": ";
}

Vault build_vault(const Config& config, std::size_t index, std::vector<std::string>& warnings) {
    const VaultConfig& vc = config.vaults[index];
    Vault vault;
    vault.id = vc.name;
    vault.name = vc.name;
    vault.from_config = true;

    for (const auto& [name, src] : vc.credentials) {
        std::string value;
        std::string origin;
        if (src.kind == CredentialSource::Kind::env) {
            origin = "env " + src.ref;
            if (const char* v = std::getenv(src.ref.c_str())) value = v;
        } else {
            origin = "file " + src.ref;
            try {
                value = read_secret_file(src.ref, {max_credential_file_bytes, Whitespace::drop_line_ending});
            } catch (const SecretFileError& e) {
                throw ConfigError(source_prefix(config) + "vaults[" + std::to_string(index) + "].credentials." + name +
                                  ": cannot read " + src.ref + ": " + e.reason());
            }
        }
        if (value.empty()) {
            warnings.push_back("vault " + vc.name + ": credential " + name + " is not set (" + origin + ")");
            continue;
        }
        // The admin API's rule: a value one way in refuses, no other accepts.
        if (auto why = validation::check_credential_value(value)) {
            wipe_string(value);
            warnings.push_back("vault " + vc.name + ": credential " + name + " is not used: the value " + *why + " (" +
                               origin + ")");
            continue;
        }
        Secret secret(std::move(value));
        // A short value lives in the string's inline buffer, which a move copies.
        wipe_string(value);
        vault.credentials.emplace(name, std::move(secret));
    }

    for (std::size_t i = 0; i < vc.services.size(); ++i)
        vault.services.push_back(ServiceBinding{vc.name + "/" + std::to_string(i), vc.services[i], nullptr});
    prepare_services(vault, &warnings);
    return vault;
}

// The primary credential's value when every credential the spec reads is
// there: a service that lacks one is refused as a whole.
const Secret* usable_credential(const Vault& vault, const AuthSpec& auth) {
    for (const auto& name : auth.credential_names())
        if (!vault.credentials.count(name)) return nullptr;
    const auto cred = vault.credentials.find(auth.primary_credential());
    return cred == vault.credentials.end() ? nullptr : &cred->second;
}

// What an origin may echo: the credential, and for basic auth the
// "user:secret" pair whose base64 is the header value.
std::shared_ptr<const RedactionPatterns> redaction_patterns(const AuthSpec& auth, const Secret& secret) {
    std::vector<Secret> needles{secret};
    if (auth.type == AuthType::basic) {
        // Built in one buffer that the Secret takes over, so no copy is left unwiped.
        const std::string_view raw = secret.reveal();
        std::string user_secret;
        user_secret.reserve(auth.user.size() + 1 + raw.size());
        user_secret.append(auth.user).append(1, ':').append(raw);
        needles.emplace_back(std::move(user_secret));
        wipe_string(user_secret);
    }
    try {
        // The placeholder the bootstrapper hands the sandbox for that credential.
        return std::make_shared<const RedactionPatterns>(needles, placeholder_for(auth.primary_credential()));
    } catch (const std::invalid_argument&) {
        // The secret occurs in its own placeholder (a very short secret):
        // redacting would put it back.
        return nullptr;
    }
}

// The service of `previous` with the same id whose tables were built from the
// same inputs (the credential's value, the auth type, user and key), if any.
const ServiceBinding* same_redaction_inputs(const Vault& previous, const ServiceBinding& service,
                                            const Secret& secret) {
    for (const auto& before : previous.services) {
        if (before.id != service.id || !before.config.redact_response) continue;
        const AuthSpec& a = before.config.auth;
        const AuthSpec& b = service.config.auth;
        if (a.type != b.type || a.user != b.user || a.primary_credential() != b.primary_credential()) return nullptr;
        const auto cred = previous.credentials.find(a.primary_credential());
        if (cred == previous.credentials.end() || cred->second.reveal() != secret.reveal()) return nullptr;
        return &before;
    }
    return nullptr;
}

// How specific a binding is, compared as a pair: an exact host ranks above
// every wildcard, a longer wildcard suffix above a shorter one; then the
// longer path_prefix.
std::pair<std::size_t, std::size_t> specificity(const ServiceConfig& service) {
    const bool wildcard = service.host.starts_with("*.");
    const std::size_t host_rank = wildcard ? service.host.size() : std::numeric_limits<std::size_t>::max();
    return {host_rank, service.path_prefix.size()};
}

std::string describe_binding(const Vault& vault, const ServiceBinding& service) {
    return "vault '" + vault.name + "' service " + service.id + " (" + service.config.host + ":" +
           std::to_string(service.config.port) + " " + service.config.path_prefix + ")";
}

// A range in IPv6 terms, so that an IPv4 range and an IPv6 one are compared
// on one scale: a.b.c.d/n is ::ffff:a.b.c.d/(96 + n).
Cidr v6_range(const Cidr& c) {
    if (c.base.v6) return c;
    Cidr out;
    out.base.v6 = true;
    out.base.bytes[10] = 0xff;
    out.base.bytes[11] = 0xff;
    for (std::size_t i = 0; i < 4; ++i) out.base.bytes[12 + i] = c.base.bytes[i];
    out.prefix_len = 96 + c.prefix_len;
    return out;
}

// Where a redacting service's tables find a form of their credential in
// another credential of the vault or in its placeholder (names only, sorted,
// once each). The response stays safe, but what the client reads is
// ambiguous: a placeholder the sandbox holds comes back partly replaced, or a
// longer credential comes back with only its middle replaced.
std::set<std::string> placeholder_collisions(const Vault& vault) {
    std::set<std::string> out;
    for (const auto& service : vault.services) {
        if (!service.redaction) continue;
        const std::string& key = service.config.auth.primary_credential();
        const auto own = vault.credentials.find(key);
        if (own == vault.credentials.end()) continue;
        for (const auto& [name, secret] : vault.credentials) {
            if (name == key) continue;
            const std::string placeholder = placeholder_for(name);
            if (service.redaction->contains_secret(placeholder))
                out.insert("vault " + vault.name + ": credential " + key + " occurs in " + placeholder +
                           ", the placeholder of credential " + name +
                           "; redacted responses cannot tell the two apart");
            if (secret.reveal() != own->second.reveal() && service.redaction->contains_secret(secret.reveal()))
                out.insert("vault " + vault.name + ": credential " + key + " occurs inside credential " + name +
                           "; redacting responses of " + service.config.host + " would leave the rest of " + name);
        }
    }
    return out;
}

}  // namespace

void prepare_services(Vault& vault, std::vector<std::string>* warnings, const Vault* previous) {
    for (auto& service : vault.services) {
        if (service.config.auth.is_minted()) service.inputs_digest = minting_inputs_digest(vault, service);
        service.redaction = nullptr;
        if (!service.config.redact_response) continue;
        const auto cred = vault.credentials.find(service.config.auth.primary_credential());
        if (cred == vault.credentials.end()) continue;
        if (const ServiceBinding* before =
                previous ? same_redaction_inputs(*previous, service, cred->second) : nullptr) {
            service.redaction = before->redaction;
            continue;
        }
        service.redaction = redaction_patterns(service.config.auth, cred->second);
        if (!service.redaction && warnings)
            warnings->push_back("vault " + vault.name + ": credential " + service.config.auth.primary_credential() +
                                " occurs in its redaction placeholder; requests to " + service.config.host +
                                " are refused (502 redaction_unavailable)");
    }
    if (!warnings) return;
    // Reported when they appear, not again on every later publish.
    const auto before = previous ? placeholder_collisions(*previous) : std::set<std::string>{};
    for (const auto& collision : placeholder_collisions(vault))
        if (!before.count(collision)) warnings->push_back(collision);
}

const Session* GatewayState::find_session(std::string_view id) const {
    return sessions.find_ptr(id);
}

const Session* GatewayState::default_session_ptr() const {
    return default_session ? find_session(*default_session) : nullptr;
}

const Session* GatewayState::active_session(std::string_view id, std::chrono::system_clock::time_point now) const {
    const Session* s = find_session(id);
    return s && !s->expired_at(now) ? s : nullptr;
}

const Session* GatewayState::default_session_for(const std::optional<IpAddress>& client,
                                                 std::chrono::system_clock::time_point now) const {
    const Session* s = default_session_ptr();
    return s && !s->expired_at(now) && s->admits(client) ? s : nullptr;
}

std::vector<Binding> GatewayState::bindings_for(const Session& s, std::string_view host, std::uint16_t port) const {
    std::vector<Binding> out;
    for (const auto& vault_name : s.vault_names) {
        const auto it = vaults.find(vault_name);
        if (it == vaults.end()) continue;
        const Vault& vault = it->second;
        for (const auto& service : vault.services) {
            if (!service.config.matches(host, port)) continue;
            out.push_back(Binding{&vault, &service, usable_credential(vault, service.config.auth)});
        }
    }
    return out;
}

RequestBinding GatewayState::binding_for_request(const Session& s, std::string_view host, std::uint16_t port,
                                                 std::string_view path) const {
    const auto candidates = bindings_for(s, host, port);
    const Binding* best = nullptr;
    bool tied = false;
    for (const auto& b : candidates) {
        if (!path_has_prefix(path, b.service->config.path_prefix)) continue;
        const auto rank = specificity(b.service->config);
        if (!best || rank > specificity(best->service->config)) {
            best = &b;
            tied = false;
        } else if (rank == specificity(best->service->config)) {
            // Both cover the path and both hosts match: equal rank means the
            // same host pattern and the same prefix.
            tied = true;
        }
    }
    if (best && tied) return RequestBinding{Coverage::tied, std::nullopt};
    if (best) return RequestBinding{Coverage::covered, *best};
    if (!candidates.empty() && !is_plain_path(path)) return RequestBinding{Coverage::unclear_path, std::nullopt};
    return RequestBinding{Coverage::outside, std::nullopt};
}

std::optional<BindingTie> GatewayState::find_binding_tie(const Session& s) const {
    // By binding (host pattern, port, path_prefix): linear in the services,
    // where comparing each with all before it grew with their square.
    std::unordered_map<std::string, std::pair<const Vault*, const ServiceBinding*>> seen;
    for (const auto& vault_name : s.vault_names) {
        const auto it = vaults.find(vault_name);
        if (it == vaults.end()) continue;
        for (const auto& service : it->second.services) {
            const auto& c = service.config;
            std::string key = c.host + '\n' + std::to_string(c.port) + '\n' + c.path_prefix;
            const auto [at, added] = seen.try_emplace(std::move(key), &it->second, &service);
            if (!added)
                return BindingTie{describe_binding(*at->second.first, *at->second.second),
                                  describe_binding(it->second, service)};
        }
    }
    return std::nullopt;
}

const Session* GatewayState::session_for_source(const std::optional<IpAddress>& client,
                                                std::chrono::system_clock::time_point now) const {
    const Session* best = nullptr;
    bool tied = false;
    for (const auto& [id, s] : sessions) {
        if (!s.source || !s.admits(client) || s.expired_at(now)) continue;
        const int rank = v6_range(*s.source).prefix_len;
        if (!best || rank > v6_range(*best->source).prefix_len) {
            best = &s;
            tied = false;
        } else if (rank == v6_range(*best->source).prefix_len) {
            tied = true;
        }
    }
    // A client inside two equal ranges belongs to neither more than the other.
    if (tied) return nullptr;
    if (best) return best;
    return default_session_for(client, now);
}

bool same_source_range(const Cidr& a, const Cidr& b) {
    const Cidr x = v6_range(a);
    const Cidr y = v6_range(b);
    return x.prefix_len == y.prefix_len && x.base == y.base;
}

Route GatewayState::route(const Session& s, const Authority& dest, EgressKind kind) const {
    // A bound host is only ever intercepted inside CONNECT: a secret goes out
    // over verified TLS or not at all, so plain http:// to it is just traffic
    // for the policy to judge.
    if (kind == EgressKind::connect && !bindings_for(s, dest.host, dest.port).empty())
        return Route{RouteKind::mitm, DenyReason::none};
    const DenyReason reason = check_destination(s.policy, dest, kind);
    if (reason == DenyReason::none) return Route{RouteKind::tunnel, DenyReason::none};
    return Route{RouteKind::denied, reason};
}

std::shared_ptr<const GatewayState> build_state(const Config& config, std::vector<std::string>& warnings) {
    auto state = std::make_shared<GatewayState>();
    for (std::size_t i = 0; i < config.vaults.size(); ++i) {
        Vault vault = build_vault(config, i, warnings);
        const std::string name = vault.name;
        state->vaults.emplace(name, std::move(vault));
    }
    for (const auto& [name, sc] : config.sessions) {
        const auto policy = config.egress_policies.find(sc.egress_policy);
        // parse_config checks this; a Config built by hand may not have been.
        if (policy == config.egress_policies.end())
            throw ConfigError(source_prefix(config) + "sessions." + name + ".egress_policy: unknown egress policy '" +
                              sc.egress_policy + "'");
        Session session;
        session.id = name;
        session.vault_names = sc.vaults;
        session.policy = policy->second;
        state->sessions.emplace(name, std::move(session));
    }
    if (state->sessions.count("default")) state->default_session = "default";
    return state;
}

}  // namespace vaultgate
