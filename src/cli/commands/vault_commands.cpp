// `vaultgate vault ...`: vaults, their credentials and services, through the
// admin API. VAULT is a vault's id or name everywhere; the server resolves it
// and an unknown one is an error (unknown_vault, exit 1).
#include "cli/commands/admin_command.hpp"
#include "cli/commands/terminal_secret.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>

namespace vaultgate::cli {

namespace {

using nlohmann::json;

struct VaultArgs {
    AdminConnection connection;
    OutputChoice output;
    std::string vault;         // VAULT: id or name
    std::string name;          // NAME: a new vault's or a credential's
    std::string service;       // SERVICE: a service id
    std::string value_file;    // --value-file
    bool value_given = false;  // --value, refused
    // add-service
    std::string host, auth, key, header, user, template_text, param, path_prefix;
    // The keys of the signed and minted types, by auth_config key.
    std::map<std::string, std::string> auth_extras;
    std::vector<std::string> scopes;  // jwt-bearer
    std::uint16_t port = 0;
    bool redact_response = false;
};

using Args = std::shared_ptr<VaultArgs>;

const char* const auth_types[] = {"api-key",   "bearer",   "basic", "header", "query", "aws-sigv4",
                                  "oauth2-client-credentials", "github-app", "jwt-bearer"};

// The auth_config keys of the signed and minted types, each an option of
// add-service named after it ("--access-key-id" for access_key_id).
struct AuthOption {
    const char* key;
    const char* help;
};
const AuthOption auth_options[] = {
    {"access_key_id", "For aws-sigv4: the credential holding the access key id"},
    {"secret_access_key", "For aws-sigv4: the credential holding the secret key"},
    {"session_token", "For aws-sigv4: the credential holding a session token"},
    {"region", "For aws-sigv4 (default: from the host)"},
    {"service", "For aws-sigv4 (default: from the host)"},
    {"token_url", "For oauth2-client-credentials; jwt-bearer (default: the key's token_uri)"},
    {"client_id", "For oauth2-client-credentials: the credential holding the client id"},
    {"client_secret", "For oauth2-client-credentials: the credential holding the client secret"},
    {"scope", "For oauth2-client-credentials"},
    {"audience", "For oauth2-client-credentials"},
    {"client_auth", "For oauth2-client-credentials: basic (default) or post"},
    {"app_id", "For github-app"},
    {"installation_id", "For github-app"},
    {"private_key", "For github-app: the credential holding the app's PEM key"},
    {"api_url", "For github-app (default https://api.github.com)"},
    {"scheme", "For github-app: bearer (default) or basic (for git)"},
};

std::string option_name(std::string key) {
    std::replace(key.begin(), key.end(), '_', '-');
    return "--" + key;
}

void add_vault_positional(CLI::App& leaf, const Args& args) {
    leaf.add_option("VAULT", args->vault, "The vault's id or name")->required();
}

std::string vault_path(const VaultArgs& a) { return admin_target({"v1", "vaults", a.vault}); }

void print_vault(const json& vault) {
    print_table({{"ID", "NAME"}, {field(vault, "id"), field(vault, "name")}});
    json credentials = items_of(vault, "credentials");
    std::printf("\n");
    if (credentials.empty()) {
        std::printf("no credentials\n");
    } else {
        std::vector<Row> rows{{"CREDENTIAL", "VERSION", "FINGERPRINT", "UPDATED"}};
        for (const auto& c : credentials)
            rows.push_back({field(c, "name"), field(c, "version"), field(c, "fingerprint"), field(c, "updated_at")});
        print_table(rows);
    }
    json services = items_of(vault, "services");
    std::printf("\n");
    if (services.empty()) {
        std::printf("no services\n");
    } else {
        std::vector<Row> rows{{"SERVICE", "HOST", "PORT", "PATH", "AUTH", "KEY", "REDACT"}};
        for (const auto& s : services) {
            json auth = s.is_object() && s.contains("auth_config") ? s["auth_config"] : json::object();
            rows.push_back({field(s, "id"), field(s, "host"), field(s, "port"), field(s, "path_prefix"),
                            field(auth, "type"), field(auth, "key"), field(s, "redact_response")});
        }
        print_table(rows);
    }
}

int vault_create(const AdminClient& client, const VaultArgs& a) {
    auto response = client.request("POST", "/v1/vaults", json{{"name", a.name}}.dump());
    expect_status(response, {200, 201}, client);
    if (a.output.json()) return print_raw(response);
    json vault = parse_body(response, client);
    print_table({{"ID", "NAME"}, {field(vault, "id"), field(vault, "name")}});
    return 0;
}

int vault_list(const AdminClient& client, const VaultArgs& a) {
    auto response = client.request("GET", "/v1/vaults");
    expect_status(response, {200}, client);
    if (a.output.json()) return print_raw(response);
    std::vector<Row> rows{{"ID", "NAME", "CREDENTIALS", "SERVICES"}};
    for (const auto& v : items_of(parse_body(response, client), "vaults")) {
        auto count = [&](const char* key) {
            return v.contains(key) && v[key].is_array() ? std::to_string(v[key].size()) : std::string("-");
        };
        rows.push_back({field(v, "id"), field(v, "name"), count("credentials"), count("services")});
    }
    print_table(rows);
    return 0;
}

int vault_show(const AdminClient& client, const VaultArgs& a) {
    auto response = client.request("GET", vault_path(a));
    expect_status(response, {200}, client);
    if (a.output.json()) return print_raw(response);
    print_vault(parse_body(response, client));
    return 0;
}

int vault_delete(const AdminClient& client, const VaultArgs& a) {
    auto response = client.request("DELETE", vault_path(a));
    expect_status(response, {200, 204}, client);
    if (a.output.json()) return print_raw(response);
    std::printf("deleted vault %s\n", a.vault.c_str());
    return 0;
}

// The value from --value-file ("-": stdin), else stdin: typed without echo at
// a terminal, else read to its end. One trailing newline is dropped.
Secret read_credential_value(const VaultArgs& a) {
    const bool from_stdin = a.value_file.empty() || a.value_file == "-";
    std::string value;
    if (!from_stdin)
        value = read_file_wiping(a.value_file, "--value-file", Whitespace::drop_line_ending);
    else if (stdin_is_terminal())
        value = read_secret_from_terminal("value for " + a.name + " (not shown): ");
    else
        value = read_all_wiping(0, "stdin", Whitespace::drop_line_ending);
    if (value.empty()) {
        wipe_string(value);
        throw UsageError(from_stdin ? "the credential value on stdin is empty"
                                    : "the credential value in " + a.value_file + " is empty");
    }
    Secret secret(std::move(value));
    wipe_string(value);
    return secret;
}

int send_credential(const AdminClient& client, const VaultArgs& a, bool rotate) {
    if (a.value_given)
        throw UsageError(
            "--value is not accepted: a secret on the command line shows in ps and in shell history; "
            "use --value-file F, or pipe the value on stdin");
    Secret value = read_credential_value(a);
    std::string body = credential_body(rotate ? "" : a.name, value);
    ScopedWipe wipe_body(body);
    auto response = rotate ? client.request("PUT", admin_target({"v1", "vaults", a.vault, "credentials", a.name}), body)
                           : client.request("POST", admin_target({"v1", "vaults", a.vault, "credentials"}), body);
    expect_status(response, rotate ? std::initializer_list<int>{200, 201, 204} : std::initializer_list<int>{200, 201},
                  client);
    if (a.output.json()) return print_raw(response);
    json answer = response.body.empty() ? json::object() : parse_body(response, client);
    print_table({{"CREDENTIAL", "VERSION"}, {a.name, field(answer, "version")}});
    return 0;
}

int vault_add_credential(const AdminClient& client, const VaultArgs& a) { return send_credential(client, a, false); }
int vault_rotate(const AdminClient& client, const VaultArgs& a) { return send_credential(client, a, true); }

int vault_remove(const AdminClient& client, const VaultArgs& a, bool credential) {
    const std::string& item = credential ? a.name : a.service;
    auto response = client.request(
        "DELETE", admin_target({"v1", "vaults", a.vault, credential ? "credentials" : "services", item}));
    expect_status(response, {200, 204}, client);
    if (a.output.json()) return print_raw(response);
    std::printf("removed %s %s from vault %s\n", credential ? "credential" : "service", item.c_str(), a.vault.c_str());
    return 0;
}

int vault_remove_credential(const AdminClient& client, const VaultArgs& a) { return vault_remove(client, a, true); }
int vault_remove_service(const AdminClient& client, const VaultArgs& a) { return vault_remove(client, a, false); }

int vault_add_service(const AdminClient& client, const VaultArgs& a) {
    // Only what was given: the server names a key the type needs or ignores.
    json auth = {{"type", a.auth}};
    const std::pair<const char*, const std::string*> extras[] = {{"key", &a.key},
                                                                 {"header", &a.header},
                                                                 {"user", &a.user},
                                                                 {"template", &a.template_text},
                                                                 {"param", &a.param}};
    for (const auto& [name, value] : extras)
        if (!value->empty()) auth[name] = *value;
    for (const auto& [name, value] : a.auth_extras) auth[name] = value;
    if (!a.scopes.empty()) auth["scopes"] = a.scopes;
    json body = {{"host", a.host}, {"auth_config", auth}};
    if (a.port != 0) body["port"] = a.port;
    if (!a.path_prefix.empty()) body["path_prefix"] = a.path_prefix;
    if (a.redact_response) body["redact_response"] = true;

    auto response = client.request("POST", admin_target({"v1", "vaults", a.vault, "services"}), body.dump());
    expect_status(response, {200, 201}, client);
    if (a.output.json()) return print_raw(response);
    json s = parse_body(response, client);
    json shown = s.is_object() && s.contains("auth_config") ? s["auth_config"] : auth;
    print_table({{"SERVICE", "HOST", "PORT", "PATH", "AUTH", "KEY", "REDACT"},
                 {field(s, "id"), field(s, "host"), field(s, "port"), field(s, "path_prefix"), field(shown, "type"),
                  field(shown, "key"), field(s, "redact_response")}});
    return 0;
}

void add_credential_options(CLI::App& leaf, const Args& args) {
    add_vault_positional(leaf, args);
    leaf.add_option("NAME", args->name, "The credential's name")->required();
    leaf.add_option("--value-file", args->value_file, "Read the value from FILE ('-': stdin)")->type_name("FILE");
    // Declared only to refuse it by name: a secret on the command line shows
    // in ps and in the shell history. The value is dropped unseen.
    leaf.add_option_function<std::string>("--value", [args](const std::string&) { args->value_given = true; })
        ->group("");
}

}  // namespace

void add_vault_commands(CLI::App& root, CommandRun& run) {
    CLI::App* vault = root.add_subcommand("vault", "Manage vaults, credentials and services (admin API)");
    vault->require_subcommand(1);
    auto args = std::make_shared<VaultArgs>();

    add_admin_leaf(*vault, "create", "Create an API vault", args, vault_create, run)
        ->add_option("NAME", args->name, "The new vault's name")
        ->required();
    add_admin_leaf(*vault, "list", "List the vaults", args, vault_list, run);
    add_vault_positional(
        *add_admin_leaf(*vault, "show", "Show a vault's credentials and services", args, vault_show, run), args);
    add_vault_positional(*add_admin_leaf(*vault, "delete", "Delete an API vault (refused while a session uses it)",
                                         args, vault_delete, run),
                         args);

    add_credential_options(
        *add_admin_leaf(*vault, "add-credential", "Add a credential; the value comes from stdin or --value-file", args,
                        vault_add_credential, run),
        args);
    add_credential_options(*add_admin_leaf(*vault, "rotate", "Replace a credential's value; from stdin or --value-file",
                                           args, vault_rotate, run),
                           args);

    CLI::App* remove_credential =
        add_admin_leaf(*vault, "remove-credential", "Remove a credential", args, vault_remove_credential, run);
    add_vault_positional(*remove_credential, args);
    remove_credential->add_option("NAME", args->name, "The credential's name")->required();

    CLI::App* add_service =
        add_admin_leaf(*vault, "add-service", "Bind a host to a credential", args, vault_add_service, run);
    add_vault_positional(*add_service, args);
    add_service->add_option("--host", args->host, "Host name, IP literal or *.name")->required()->type_name("HOST");
    add_service->add_option("--port", args->port, "Port (default 443)")->check(CLI::Range(1, 65535))->type_name("PORT");
    add_service->add_option("--path-prefix", args->path_prefix, "Only paths under this prefix (default /)");
    add_service->add_option("--auth", args->auth, "How the credential is sent")
        ->required()
        ->check(CLI::IsMember(std::vector<std::string>(std::begin(auth_types), std::end(auth_types))))
        ->type_name("TYPE");
    add_service->add_option("--key", args->key, "The credential to inject; for jwt-bearer, the service-account key")
        ->type_name("NAME");
    add_service->add_option("--header", args->header, "For api-key (default x-api-key) and header");
    add_service->add_option("--user", args->user, "For basic");
    add_service->add_option("--template", args->template_text, "For header; contains {secret} once");
    add_service->add_option("--param", args->param, "For query");
    for (const auto& option : auth_options)
        add_service->add_option_function<std::string>(
            option_name(option.key), [args, key = std::string(option.key)](const std::string& value) {
                args->auth_extras[key] = value;
            },
            option.help);
    add_service->add_option("--scopes", args->scopes, "For jwt-bearer: the scopes, comma-separated")
        ->delimiter(',')
        ->type_name("SCOPE,...");
    add_service->add_flag("--redact-response", args->redact_response, "Redact the secret from responses")
        ->disable_flag_override();

    CLI::App* remove_service =
        add_admin_leaf(*vault, "remove-service", "Remove a service", args, vault_remove_service, run);
    add_vault_positional(*remove_service, args);
    remove_service->add_option("SERVICE", args->service, "The service's id")->required();
}

}  // namespace vaultgate::cli
