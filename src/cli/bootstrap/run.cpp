// The order is the point: every check first, then the vault, the credentials,
// the services, the session, the record, the files, and the env last.
#include "cli/bootstrap/run.hpp"

#include "cli/bootstrap/files.hpp"
#include "cli/bootstrap/run_record.hpp"
#include "cli/bootstrap/vault_steps.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace vaultgate::cli::bootstrap {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// What stdin held, checked: the env with placeholders, and the secrets.
struct Input {
    EnvList env;
    std::vector<SecretVar> secrets;
};

Input read_input(const RunOptions& options) {
    if (::isatty(STDIN_FILENO))
        std::fprintf(stderr, "vaultgate bootstrap: reading the env object (JSON) from stdin; end it with Ctrl-D\n");
    std::string text = read_all_wiping(STDIN_FILENO, "stdin", Whitespace::keep);
    std::optional<EnvList> parsed;
    {
        ScopedWipe wipe_input(text);
        std::string error;
        parsed = parse_env_object(text, &error);
        if (!parsed) throw UsageError(error);
    }
    Input input{std::move(*parsed), {}};

    std::string error;
    auto names = choose_secret_names(input.env, options.secret_names, &error);
    if (!names) {
        for (auto& var : input.env) wipe_string(var.value);
        throw UsageError(error);
    }
    // From here on the real values live only in `secrets`, which wipe themselves.
    input.secrets = take_secrets(input.env, *names);
    if (input.secrets.empty())
        std::fprintf(stderr,
                     "vaultgate bootstrap: warning: no secret variables (none ends in _API_KEY, _TOKEN or _SECRET; "
                     "name them with --secret NAME)\n");
    if (auto bad = unsendable_secrets(input.secrets); !bad.empty())
        throw UsageError(bad.front().name + ": " + bad.front().reason);
    if (find_aws_credential_set(input.secrets) && !complete_aws_region(input.env))
        std::fprintf(stderr,
                     "vaultgate bootstrap: warning: AWS keys without AWS_REGION or AWS_DEFAULT_REGION; most AWS "
                     "SDKs need a region\n");
    for (const auto& name : scrub_other_values(input.env, input.secrets))
        std::fprintf(stderr, "vaultgate bootstrap: %s held a secret's value; it now holds the placeholder\n",
                     name.c_str());
    // An input the format cannot carry fails before the vault changes.
    if (auto problem = render_problem(input.env, options.format))
        throw UsageError("cannot write the environment: " + *problem);
    return input;
}

// The session's proxy variables; the platform's own proxy settings, if it
// passed any, are overridden, since traffic that skips vaultgate carries only
// placeholders and fails.
void add_session_env(EnvList& env, const json& session, const AdminClient& client) {
    std::optional<std::string> proxy_url;
    if (session.contains("proxy_url") && session["proxy_url"].is_string())
        proxy_url = session["proxy_url"].get<std::string>();
    json given = session.contains("env") && session["env"].is_object() ? session["env"] : json::object();
    for (const auto& [name, value] : given.items())
        if (value.is_string() && is_env_name(name)) set_env(env, name, value.get<std::string>());
    for (const char* name : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}) {
        if (given.contains(name) && given[name].is_string()) continue;
        if (!proxy_url) throw std::runtime_error("admin API at " + client.url() + ": the new session has no proxy_url");
        set_env(env, name, *proxy_url);
    }
    if (!given.contains("NO_PROXY")) {
        std::string no_proxy = "localhost,127.0.0.1,::1";
        if (given.contains("no_proxy") && given["no_proxy"].is_string())
            no_proxy = given["no_proxy"].get<std::string>();
        set_env(env, "NO_PROXY", no_proxy);
    }
}

void add_trust_env(EnvList& env, const fs::path& ca_path, const fs::path& bundle_path) {
    for (const char* name :
         {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "AWS_CA_BUNDLE"})
        set_env(env, name, bundle_path.string());
    set_env(env, "NODE_EXTRA_CA_CERTS", ca_path.string());
    // git sends proxy credentials only after a 407 unless told to send them
    // at once; with a default session configured there is no 407, and git
    // would run on the default session instead of this one.
    set_env(env, "GIT_HTTP_PROXY_AUTHMETHOD", "basic");
}

RunRecord record_of(const VaultState& vault, const std::string& session_id) {
    return {session_id,
            vault.id,
            vault.name,
            vault.created,
            vault.credentials_created,
            vault.credentials_rotated,
            vault.services_created};
}

int run_steps(const AdminClient& client, const RunOptions& options, Input input, OutDir& out_dir) {
    const std::vector<UrlVar> urls = find_url_vars(input.env);
    std::optional<VaultState> found;
    if (options.vault_name) found = find_vault(client, *options.vault_name);
    VaultState vault =
        found ? std::move(*found) : create_vault(client, options.vault_name.value_or("bootstrap-" + random_hex(8)));
    std::string session_id;
    try {
        for (const auto& secret : input.secrets) store_secret(client, vault, secret);
        const auto aws = find_aws_credential_set(input.secrets);
        if (aws) bind_aws(client, vault, *aws);
        for (const auto& secret : input.secrets) {
            if (aws && in_aws_set(*aws, secret.name)) continue;
            if (auto match = match_url_var(secret.name, urls))
                bind_secret(client, vault, secret.name, urls[*match]);
            else
                std::fprintf(stderr,
                             "vaultgate bootstrap: %s is stored but not bound: %s; bind it with "
                             "`vaultgate vault add-service %s ...`\n",
                             secret.name.c_str(),
                             urls.empty() ? "no variable holds an https:// URL"
                                          : "no single URL variable shares a leading name word with it",
                             vault.id.c_str());
        }

        json request = {{"vault_ids", {vault.id}}};
        if (options.ttl) request["ttl_seconds"] = *options.ttl;
        auto response = client.request("POST", "/v1/sessions", request.dump());
        expect_status(response, {200, 201}, client);
        json session = parse_body(response, client);
        if (!session.contains("id") || !session["id"].is_string())
            throw std::runtime_error("admin API at " + client.url() + ": the new session has no id");
        session_id = session["id"].get<std::string>();
        save_record(record_of(vault, session_id));
        if (!session.contains("ca_cert_pem") || !session["ca_cert_pem"].is_string())
            throw std::runtime_error("admin API at " + client.url() + ": the new session has no ca_cert_pem");
        const std::string ca_pem = session["ca_cert_pem"].get<std::string>();

        const fs::path ca_path = out_dir.path / "ca.pem";
        const fs::path bundle_path = out_dir.path / "ca-bundle.pem";
        write_file(ca_path, ca_pem);
        write_file(bundle_path, ca_bundle(ca_pem));
        add_session_env(input.env, session, client);
        add_trust_env(input.env, ca_path, bundle_path);
    } catch (const std::exception&) {
        if (!session_id.empty())
            std::fprintf(stderr,
                         "vaultgate bootstrap: remove what this run made with `vaultgate bootstrap --cleanup %s`\n",
                         session_id.c_str());
        else if (vault.changed())
            std::fprintf(stderr, "vaultgate bootstrap: vault %s keeps what was stored in it before the failure\n",
                         vault.id.c_str());
        throw;
    }

    if (auto problem = render_problem(input.env, options.format))
        throw std::runtime_error("cannot write the environment: " + *problem);
    std::string text = render_env(input.env, options.format);
    // The last gate: a secret so short or so odd that it turns up in a proxy
    // URL or a path is still never printed.
    if (auto leaked = leaked_secrets(text, input.secrets); !leaked.empty())
        throw std::runtime_error("refusing to print the environment: the value of " + leaked.front() +
                                 " occurs in it (is it that short?)");
    out_dir.made_here = false;  // it holds the CA files the env points at
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0) throw std::runtime_error(std::string("writing stdout: ") + std::strerror(errno));
    std::fprintf(stderr,
                 "vaultgate bootstrap: session %s; remove what this run made with `vaultgate bootstrap --cleanup %s`\n",
                 session_id.c_str(), session_id.c_str());
    return 0;
}

}  // namespace

int run_bootstrap(const RunOptions& options, const OpenAdmin& open_admin) {
    Input input = read_input(options);
    check_bindings(input.secrets, find_url_vars(input.env));
    AdminClient client = open_admin();
    prepare_record_dir();
    OutDir out_dir = prepare_out_dir(options.out_dir);
    auto remove_unused_dir = [&] {
        std::error_code ec;
        if (out_dir.made_here) fs::remove_all(out_dir.path, ec);
    };
    int rc = 1;
    try {
        rc = report_api_errors([&] { return run_steps(client, options, std::move(input), out_dir); });
    } catch (...) {
        remove_unused_dir();
        throw;
    }
    if (rc != 0) remove_unused_dir();
    return rc;
}

}  // namespace vaultgate::cli::bootstrap
