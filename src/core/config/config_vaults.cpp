// The vaults section: each vault's credential sources and the services its
// credentials are bound to.
#include "config_sections.hpp"

#include "vaultgate/config/service_binding.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"  // is_env_name
#include "vaultgate/credentials/validation.hpp"

#include <limits>
#include <map>

namespace vaultgate::config_sections {

namespace {

using yaml::child;
using yaml::indexed;
using yaml::shown;
using yaml::with_value;

// { env: NAME } or { file: PATH }. The value is never shown: a scalar here is
// most likely the secret itself, and a bad env name may be one too.
CredentialSource read_credential(const yaml::Value& v) {
    const std::string shape = "use { env: NAME } or { file: PATH }";
    if (v.is_scalar()) v.fail("inline values are not allowed; " + shape);
    if (!v.is_map()) v.fail("expected { env: NAME } or { file: PATH }, got " + v.kind());
    const auto f = v.fields({"env", "file"});
    const auto* env = f.find("env");
    const auto* file = f.find("file");
    if (env && file) file->fail_at_key(v.path(), "give either env or file, not both");
    if (!env && !file) v.fail("expected { env: NAME } or { file: PATH }");
    CredentialSource src;
    if (env) {
        if (!env->is_scalar() || !is_env_name(env->scalar()))
            env->fail("expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
        src.kind = CredentialSource::Kind::env;
        src.ref = env->scalar();
    } else {
        if (!file->is_scalar() || file->scalar().empty()) file->fail("expected a file path, got " + file->kind());
        src.kind = CredentialSource::Kind::file;
        src.ref = file->scalar();
    }
    return src;
}

AuthSpec read_auth(const yaml::Value& v, const VaultConfig& vault) {
    const auto f = v.fields(validation::auth_keys);
    validation::AuthFields given;
    for (const auto& [key, entry] : f) {
        if (entry.is_null()) continue;  // an optional key left empty, as `audience: null`
        validation::AuthValue value;
        if (entry.is_list()) {
            value.is_list = true;
            for (const auto& item : entry.list()) value.list.push_back(item.string());
        } else {
            value.text = entry.string();
        }
        given.emplace(key, std::move(value));
    }
    AuthSpec spec;
    if (auto err = validation::build_auth_spec(given, &spec)) {
        if (err->field.empty()) v.fail(err->message);
        const auto& at = f.at(err->field);
        if (err->key_itself) at.fail_at_key(at.path(), err->message);
        // Plain settings help find the mistake; credential names, user and
        // template are never shown, since that is where a real secret gets pasted.
        const auto& value = given.at(err->field);
        const bool may_show = !value.is_list && !validation::names_credential(err->field) &&
                              err->field != "user" && err->field != "template";
        at.fail(may_show ? with_value(err->message, value.text) : err->message);
    }
    for (const auto& [key, value] : given) {
        if (!validation::names_credential(key) || vault.credentials.count(value.text)) continue;
        std::vector<std::string> names;
        for (const auto& [n, _] : vault.credentials) names.push_back(n);
        f.at(key).fail("no credential " + shown(value.text) + " in vault '" + vault.name + "'" +
                       (names.empty() ? std::string(" (it has no credentials)")
                                      : " (credentials: " + joined(names) + ")"));
    }
    return spec;
}

ServiceConfig read_service(const yaml::Value& v, const VaultConfig& vault, const std::vector<ListenAddress>& own) {
    if (!v.is_map()) v.fail("expected a map, got " + v.kind());
    const auto f = v.fields({"host", "port", "path_prefix", "auth", "redact_response"});
    ServiceConfig svc;
    const auto* host = f.find("host");
    if (!host) v.fail("missing required key 'host'");
    const auto raw_host = host->string();
    if (auto why = validation::check_service_host(raw_host, &svc.host)) host->fail(with_value(*why, raw_host));
    if (auto* p = f.find("port")) {
        const auto port = p->unsigned_integer(0, std::numeric_limits<std::uint64_t>::max());
        // unsigned_integer takes at most 18 digits, so the value fits the signed check.
        if (auto why = validation::check_service_port(static_cast<std::int64_t>(port)))
            p->fail(*why + ", got " + std::to_string(port));
        svc.port = static_cast<std::uint16_t>(port);
    }
    if (auto* p = f.find("path_prefix")) {
        svc.path_prefix = p->string();
        if (auto why = validation::check_path_prefix(svc.path_prefix)) p->fail(with_value(*why, svc.path_prefix));
    }
    const auto* auth = f.find("auth");
    if (!auth) v.fail("missing required key 'auth'");
    svc.auth = read_auth(*auth, vault);
    if (auto* p = f.find("redact_response")) svc.redact_response = p->boolean();
    if (auto refusal = check_service_binding(svc.host, svc.port, own)) host->fail(refusal->message);
    return svc;
}

}  // namespace

void read_vaults(const yaml::Value& section, Config& cfg) {
    const auto own = own_listeners(cfg);
    std::map<std::string, std::string> seen;  // name -> path of its first use
    for (const auto& item : section.list()) {
        if (!item.is_map()) item.fail("expected a map, got " + item.kind());
        const auto f = item.fields({"name", "credentials", "services"});
        VaultConfig vault;

        const auto* name = f.find("name");
        if (!name) item.fail("missing required key 'name'");
        vault.name = name->string();
        if (auto why = validation::check_name(vault.name, "vault")) name->fail(with_value(*why, vault.name));
        if (auto [it, inserted] = seen.emplace(vault.name, item.path()); !inserted)
            name->fail("duplicate vault name " + shown(vault.name) + " (also " + it->second + ")");

        if (auto* c = f.find("credentials")) {
            for (const auto& cred : c->entries()) {
                require_key_name(cred, "credential", c->path());
                vault.credentials.emplace(cred.key(), read_credential(cred));
            }
        }
        if (auto* s = f.find("services")) {
            const auto services = s->list();
            for (const auto& one : services) {
                auto svc = read_service(one, vault, own);
                // Only the first of two identical bindings could ever apply.
                for (std::size_t k = 0; k < vault.services.size(); ++k) {
                    if (vault.services[k].same_binding(svc))
                        one.fail("same host, port and path_prefix as " + indexed(s->path(), k));
                }
                vault.services.push_back(std::move(svc));
            }
        }
        cfg.vaults.push_back(std::move(vault));
    }
}

}  // namespace vaultgate::config_sections
