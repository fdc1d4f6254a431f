// `vaultgate session ...`: sessions through the admin API. Listing and
// showing print metadata only; the server never sends a token back.
#include "cli/commands/admin_command.hpp"
#include "vaultgate/state/session_ttl.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>

namespace vaultgate::cli {

namespace {

using nlohmann::json;

struct SessionArgs {
    AdminConnection connection;
    OutputChoice output;
    std::string id;
    std::vector<std::string> vaults, allowed_domains;
    std::uint64_t ttl = 0;
    std::string policy, source;
};

using Args = std::shared_ptr<SessionArgs>;

// "a,b" for an array: strings as they are, {"id","name"} objects by name
// (their id when the name is gone), anything else as JSON.
std::string joined(const json& obj, const char* key) {
    if (!obj.is_object() || !obj.contains(key) || !obj[key].is_array()) return field(obj, key);
    std::string out;
    for (const auto& item : obj[key]) {
        if (!out.empty()) out += ",";
        if (item.is_string()) {
            out += item.get<std::string>();
        } else if (const std::string name = field(item, "name"); name != "-") {
            out += name;
        } else {
            out += item.is_object() ? field(item, "id") : item.dump();
        }
    }
    return out.empty() ? "-" : out;
}

// The session's vaults: {"vaults":[{"id","name"}]}, else a list of ids.
std::string vaults_of(const json& s) {
    if (s.is_object() && s.contains("vaults") && s["vaults"].is_array() && !s["vaults"].empty())
        return joined(s, "vaults");
    return joined(s, "vault_ids");
}

// A policy given by name, or "inline".
std::string policy_of(const json& s) {
    if (s.is_object() && s.contains("egress_policy") && s["egress_policy"].is_object()) return "inline";
    return field(s, "egress_policy");
}

Row session_row(const json& s) {
    return {field(s, "id"),     vaults_of(s),           policy_of(s),
            field(s, "source"), field(s, "created_at"), field(s, "expires_at")};
}

const Row session_header{"ID", "VAULTS", "POLICY", "SOURCE", "CREATED", "EXPIRES"};

int session_create(const AdminClient& client, const SessionArgs& a) {
    json body = {{"vault_ids", a.vaults}};
    if (a.ttl != 0) body["ttl_seconds"] = a.ttl;
    if (!a.allowed_domains.empty())
        body["egress_policy"] = {{"allow_https", true}, {"allowed_domains", a.allowed_domains}};
    else if (!a.policy.empty())
        body["egress_policy"] = a.policy;
    if (!a.source.empty()) body["source"] = a.source;

    auto response = client.request("POST", "/v1/sessions", body.dump());
    expect_status(response, {200, 201}, client);
    if (a.output.json()) return print_raw(response);
    json s = parse_body(response, client);
    std::vector<Row> rows{{"id", field(s, "id")},
                          {"token", field(s, "token")},
                          {"expires_at", field(s, "expires_at")},
                          {"proxy_url", field(s, "proxy_url")}};
    if (s.contains("env") && s["env"].is_object()) {
        const char* label = "env";
        for (const auto& [name, value] : s["env"].items()) {
            rows.push_back({label, name + "=" + (value.is_string() ? value.get<std::string>() : value.dump())});
            label = "";
        }
    }
    if (s.contains("ca_cert_pem") && s["ca_cert_pem"].is_string())
        rows.push_back(
            {"ca_cert_pem", std::to_string(s["ca_cert_pem"].get<std::string>().size()) + " bytes (--json prints it)"});
    print_table(rows);
    return 0;
}

int session_list(const AdminClient& client, const SessionArgs& a) {
    auto response = client.request("GET", "/v1/sessions");
    expect_status(response, {200}, client);
    if (a.output.json()) return print_raw(response);
    std::vector<Row> rows{session_header};
    for (const auto& s : items_of(parse_body(response, client), "sessions")) rows.push_back(session_row(s));
    print_table(rows);
    return 0;
}

int session_show(const AdminClient& client, const SessionArgs& a) {
    auto response = client.request("GET", admin_target({"v1", "sessions", a.id}));
    expect_status(response, {200}, client);
    if (a.output.json()) return print_raw(response);
    json s = parse_body(response, client);
    if (s.is_object() && s.contains("session") && s["session"].is_object()) s = s["session"];
    print_table({session_header, session_row(s)});
    return 0;
}

int session_delete(const AdminClient& client, const SessionArgs& a) {
    auto response = client.request("DELETE", admin_target({"v1", "sessions", a.id}));
    expect_status(response, {200, 204}, client);
    if (a.output.json()) return print_raw(response);
    std::printf("deleted session %s\n", a.id.c_str());
    return 0;
}

}  // namespace

void add_session_commands(CLI::App& root, CommandRun& run) {
    CLI::App* session = root.add_subcommand("session", "Create, list, show and delete sessions (admin API)");
    session->require_subcommand(1);
    auto args = std::make_shared<SessionArgs>();

    CLI::App* create =
        add_admin_leaf(*session, "create", "Create a session; prints its token once", args, session_create, run);
    create->add_option("--vault", args->vaults, "A vault's id or name (repeatable)")->required()->type_name("VAULT");
    create->add_option("--ttl", args->ttl, "Lifetime in seconds (server default 3600)")
        ->check(CLI::Range(std::uint64_t{1}, static_cast<std::uint64_t>(max_session_ttl.count())))
        ->type_name("SECONDS");
    CLI::Option* policy = create->add_option("--policy", args->policy, "A config egress policy by name");
    create->add_option("--allow-domain", args->allowed_domains, "An inline policy allowing HTTPS to D (repeatable)")
        ->type_name("D")
        ->excludes(policy);
    create->add_option("--source", args->source, "Pin the session to client addresses in CIDR")->type_name("CIDR");

    add_admin_leaf(*session, "list", "List the sessions (no tokens)", args, session_list, run);
    add_admin_leaf(*session, "show", "Show one session (no token)", args, session_show, run)
        ->add_option("ID", args->id, "The session's id")
        ->required();
    add_admin_leaf(*session, "delete", "Delete a session and close its connections", args, session_delete, run)
        ->add_option("ID", args->id, "The session's id")
        ->required();
}

}  // namespace vaultgate::cli
