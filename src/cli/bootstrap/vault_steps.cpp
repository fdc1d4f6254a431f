#include "cli/bootstrap/vault_steps.hpp"

#include "vaultgate/config/service_binding.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace vaultgate::cli::bootstrap {

using nlohmann::json;

namespace {

constexpr const char* bound_header = "x-api-key";

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::string string_field(const json& obj, const char* key, std::string fallback = {}) {
    if (obj.is_object() && obj.contains(key) && obj[key].is_string()) return obj[key].get<std::string>();
    return fallback;
}

std::string aws_keys_of(const json& auth) {
    if (string_field(auth, "type") != "aws-sigv4") return {};
    return string_field(auth, "access_key_id") + " " + string_field(auth, "secret_access_key") + " " +
           string_field(auth, "session_token");
}

void read_vault_contents(const json& vault, VaultState& state) {
    for (const auto& c : items_of(vault, "credentials"))
        if (auto name = string_field(c, "name"); !name.empty()) state.credentials.push_back(name);
    for (const auto& s : items_of(vault, "services")) {
        if (!s.is_object() || !s.contains("host") || !s["host"].is_string()) continue;
        std::uint16_t port = 443;
        if (s.contains("port") && s["port"].is_number_unsigned()) port = s["port"].get<std::uint16_t>();
        // Compared as the proxy compares; a wildcard or odd host has no
        // authority, so it never matches a URL's host, only its own pattern.
        const std::string pattern = s["host"].get<std::string>();
        auto host = normalize_host(pattern);
        const json auth = s.contains("auth_config") ? s["auth_config"] : json::object();
        ServiceShape shape{{},
                           string_field(s, "path_prefix", "/"),
                           string_field(auth, "type"),
                           lower(string_field(auth, "header", bound_header)),
                           string_field(auth, "key"),
                           pattern,
                           aws_keys_of(auth)};
        if (host) shape.authority = {*host.host, port, host.kind};
        shape.authority.port = port;
        state.services.push_back(std::move(shape));
    }
}

std::string id_of(const json& body, const AdminClient& client) {
    if (!body.is_object() || !body.contains("id") || !body["id"].is_string())
        throw std::runtime_error("admin API at " + client.url() + ": the answer has no \"id\"");
    return body["id"].get<std::string>();
}

bool has_credential(const VaultState& vault, const std::string& name) {
    return std::find(vault.credentials.begin(), vault.credentials.end(), name) != vault.credentials.end();
}

}  // namespace

json items_of(const json& body, const char* key) {
    if (body.is_array()) return body;
    if (body.is_object() && body.contains(key) && body[key].is_array()) return body[key];
    return json::array();
}

std::optional<VaultState> find_vault(const AdminClient& client, const std::string& name) {
    auto list = client.request("GET", "/v1/vaults");
    expect_status(list, {200}, client);
    for (const auto& v : items_of(parse_body(list, client), "vaults")) {
        if (!v.is_object() || !v.contains("name") || v["name"] != name) continue;
        if (v.contains("source") && v["source"] == "config")
            throw UsageError("--vault " + name +
                             ": that vault is defined in the config file, and the admin API cannot store "
                             "credentials in it; give another name");
        VaultState state;
        state.id = id_of(v, client);
        state.name = name;
        auto detail = client.request("GET", admin_target({"v1", "vaults", state.id}));
        expect_status(detail, {200}, client);
        read_vault_contents(parse_body(detail, client), state);
        return state;
    }
    return std::nullopt;
}

VaultState create_vault(const AdminClient& client, const std::string& name) {
    auto response = client.request("POST", "/v1/vaults", json{{"name", name}}.dump());
    expect_status(response, {200, 201}, client);
    VaultState state;
    state.id = id_of(parse_body(response, client), client);
    state.name = name;
    state.created = true;
    std::fprintf(stderr, "vaultgate bootstrap: created vault %s (%s)\n", name.c_str(), state.id.c_str());
    return state;
}

void check_bindings(const std::vector<SecretVar>& secrets, const std::vector<UrlVar>& urls) {
    const auto aws = find_aws_credential_set(secrets);
    for (const auto& secret : secrets) {
        if (aws && in_aws_set(*aws, secret.name)) continue;  // bound to AWS's endpoints, not to a URL
        auto match = match_url_var(secret.name, urls);
        if (!match || !urls[*match].target.tls) continue;
        const Authority& dest = urls[*match].target.authority;
        if (auto refusal = check_service_binding(dest.host, dest.port, {}))
            throw UsageError(secret.name + " cannot be bound to the host of " + urls[*match].name + " (" +
                             refusal->code + ": " + refusal->message + "); nothing was stored");
    }
}

void store_secret(const AdminClient& client, VaultState& vault, const SecretVar& secret) {
    const std::string base = admin_target({"v1", "vaults", vault.id, "credentials"});
    const std::string one = admin_target({"v1", "vaults", vault.id, "credentials", secret.name});
    if (!has_credential(vault, secret.name)) {
        std::string body = credential_body(secret.name, secret.value);
        ScopedWipe wipe(body);
        auto response = client.request("POST", base, body);
        try {
            expect_status(response, {200, 201}, client);
            vault.credentials.push_back(secret.name);
            vault.credentials_created.push_back(secret.name);
            std::fprintf(stderr, "vaultgate bootstrap: stored %s in vault %s\n", secret.name.c_str(), vault.id.c_str());
            return;
        } catch (const ApiError& e) {
            // Made meanwhile by another run: rotate it below, as if it had been there.
            if (e.code != "credential_exists") throw;
        }
    }
    std::string body = credential_body("", secret.value);
    ScopedWipe wipe(body);
    auto response = client.request("PUT", one, body);
    expect_status(response, {200, 201, 204}, client);
    vault.credentials_rotated.push_back(secret.name);
    std::fprintf(stderr, "vaultgate bootstrap: rotated %s in vault %s\n", secret.name.c_str(), vault.id.c_str());
}

void bind_secret(const AdminClient& client, VaultState& vault, const std::string& secret_name, const UrlVar& url) {
    const Authority& dest = url.target.authority;
    const std::string where = format_authority(dest);
    if (!url.target.tls) {
        std::fprintf(stderr,
                     "vaultgate bootstrap: %s is not bound: %s is a plain http:// URL, and vaultgate sends "
                     "secrets only over TLS\n",
                     secret_name.c_str(), url.name.c_str());
        return;
    }
    const auto same_place = [&](const ServiceShape& s) {
        return s.authority.host == dest.host && s.authority.port == dest.port;
    };
    const auto ours = [&](const ServiceShape& s) {
        return same_place(s) && s.path_prefix == "/" && s.auth_type == "api-key" && s.auth_header == bound_header &&
               s.auth_key == secret_name;
    };
    if (std::any_of(vault.services.begin(), vault.services.end(), ours)) {
        std::fprintf(stderr, "vaultgate bootstrap: %s is already bound to %s in vault %s; kept\n", secret_name.c_str(),
                     where.c_str(), vault.id.c_str());
        return;
    }
    if (std::any_of(vault.services.begin(), vault.services.end(), same_place)) {
        std::fprintf(stderr,
                     "vaultgate bootstrap: %s is not bound: vault %s already has another service for %s; "
                     "left as it is\n",
                     secret_name.c_str(), vault.id.c_str(), where.c_str());
        return;
    }
    json body = {{"host", dest.host},
                 {"port", dest.port},
                 {"auth_config", {{"type", "api-key"}, {"header", bound_header}, {"key", secret_name}}}};
    auto response = client.request("POST", admin_target({"v1", "vaults", vault.id, "services"}), body.dump());
    expect_status(response, {200, 201}, client);
    vault.services.push_back({dest, "/", "api-key", bound_header, secret_name, {}, {}});
    vault.services_created.push_back(id_of(parse_body(response, client), client));
    std::fprintf(stderr, "vaultgate bootstrap: bound %s to %s (x-api-key, from %s)\n", secret_name.c_str(),
                 where.c_str(), url.name.c_str());
}

void bind_aws(const AdminClient& client, VaultState& vault, const AwsCredentialSet& set) {
    const std::string keys = set.access_key_id + " " + set.secret_access_key + " " + set.session_token;
    const auto same_place = [&](const ServiceShape& s) {
        return s.host_pattern == aws_bound_host && s.authority.port == 443;
    };
    const auto ours = [&](const ServiceShape& s) {
        return same_place(s) && s.path_prefix == "/" && s.aws_keys == keys;
    };
    if (std::any_of(vault.services.begin(), vault.services.end(), ours)) {
        std::fprintf(stderr, "vaultgate bootstrap: the AWS keys are already bound to %s in vault %s; kept\n",
                     std::string(aws_bound_host).c_str(), vault.id.c_str());
        return;
    }
    if (std::any_of(vault.services.begin(), vault.services.end(), same_place)) {
        std::fprintf(stderr,
                     "vaultgate bootstrap: the AWS keys are not bound: vault %s already has another service for %s; "
                     "left as it is\n",
                     vault.id.c_str(), std::string(aws_bound_host).c_str());
        return;
    }
    json auth = {
        {"type", "aws-sigv4"}, {"access_key_id", set.access_key_id}, {"secret_access_key", set.secret_access_key}};
    if (!set.session_token.empty()) auth["session_token"] = set.session_token;
    json body = {{"host", aws_bound_host}, {"port", 443}, {"auth_config", auth}};
    auto response = client.request("POST", admin_target({"v1", "vaults", vault.id, "services"}), body.dump());
    expect_status(response, {200, 201}, client);
    ServiceShape shape{{}, "/", "aws-sigv4", bound_header, "", std::string(aws_bound_host), keys};
    shape.authority.port = 443;
    vault.services.push_back(std::move(shape));
    vault.services_created.push_back(id_of(parse_body(response, client), client));
    std::fprintf(stderr, "vaultgate bootstrap: bound the AWS keys to %s (aws-sigv4)\n",
                 std::string(aws_bound_host).c_str());
}

}  // namespace vaultgate::cli::bootstrap
