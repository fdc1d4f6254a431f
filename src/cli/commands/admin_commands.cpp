// `vaultgate vault ...`, `vaultgate session ...` and `vaultgate logs ...`: thin
// clients of the admin API. Each prints a table by default and the server's JSON
// with --json; an API error prints "vaultgate: <code>: <message>" and exits 1.
#include "cli/admin_client.hpp"
#include "cli/commands.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

namespace vaultgate::cli {

namespace {

using nlohmann::json;
using Row = std::vector<std::string>;

OptionSpec with_admin(std::vector<std::string_view> with_value, std::vector<std::string_view> flags = {}) {
    OptionSpec spec = admin_options;
    spec.with_value.insert(spec.with_value.end(), with_value.begin(), with_value.end());
    spec.flags.insert(spec.flags.end(), flags.begin(), flags.end());
    return spec;
}

// Positionals are never quoted back: a user may have put a secret there by mistake.
void expect_positionals(const CommandLine& cl, std::size_t count, const char* usage) {
    if (cl.positional.size() != count) throw UsageError(std::string("usage: vaultgate ") + usage);
}

void print_table(const std::vector<Row>& rows) {
    std::vector<std::size_t> widths;
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (widths.size() <= i) widths.push_back(0);
            widths[i] = std::max(widths[i], row[i].size());
        }
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
        }
        std::printf("%s\n", line.c_str());
    }
}

// A field as table text; "-" when absent or empty, so columns stay countable
// (a CONNECT has no path). The server's shapes are read loosely
// so that an added field or a number sent as a string does not break a listing.
std::string field(const json& obj, const char* key) {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return "-";
    const json& v = obj[key];
    if (v.is_string()) return v.get_ref<const std::string&>().empty() ? "-" : v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    return v.dump();
}

// A list answer: a bare array, or an object holding the array under `key`.
json items_of(const json& body, const char* key) {
    if (body.is_array()) return body;
    if (body.is_object() && body.contains(key) && body[key].is_array()) return body[key];
    return json::array();
}

int print_raw(const AdminResponse& response) {
    if (response.body.empty()) return 0;
    std::fwrite(response.body.data(), 1, response.body.size(), stdout);
    if (response.body.back() != '\n') std::fputc('\n', stdout);
    return 0;
}

// ---- vault ------------------------------------------------------------------

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

int vault_create(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 1, "vault create NAME");
    auto response = client.request("POST", "/v1/vaults", json{{"name", cl.positional[0]}}.dump());
    expect_status(response, {200, 201}, client);
    if (cl.flag("--json")) return print_raw(response);
    json vault = parse_body(response, client);
    print_table({{"ID", "NAME"}, {field(vault, "id"), field(vault, "name")}});
    return 0;
}

int vault_list(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 0, "vault list");
    auto response = client.request("GET", "/v1/vaults");
    expect_status(response, {200}, client);
    if (cl.flag("--json")) return print_raw(response);
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

int vault_show(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 1, "vault show ID");
    auto response = client.request("GET", admin_target({"v1", "vaults", cl.positional[0]}));
    expect_status(response, {200}, client);
    if (cl.flag("--json")) return print_raw(response);
    print_vault(parse_body(response, client));
    return 0;
}

// The value from --value-file (or "-" for stdin), else all of stdin; one
// trailing newline dropped, since files and `echo` end with one.
Secret read_credential_value(const CommandLine& cl) {
    auto file = cl.value("--value-file");
    bool from_stdin = !file || *file == "-";
    if (from_stdin && ::isatty(STDIN_FILENO))
        std::fprintf(stderr, "vaultgate: reading the value from stdin; end it with Ctrl-D\n");
    std::string value = from_stdin ? read_all_wiping(STDIN_FILENO, "stdin", Whitespace::drop_line_ending)
                                   : read_file_wiping(*file, "--value-file", Whitespace::drop_line_ending);
    if (value.empty()) {
        wipe_string(value);
        throw UsageError(from_stdin ? "the credential value on stdin is empty"
                                    : "the credential value in " + *file + " is empty");
    }
    Secret secret(std::move(value));
    wipe_string(value);
    return secret;
}

// Checked before anything else so the message is about the real problem, not
// "unknown option".
void refuse_value_option(const Args& args) {
    for (const auto& arg : args)
        if (arg == "--value" || arg.rfind("--value=", 0) == 0)
            throw UsageError(
                "--value is not accepted: a secret on the command line shows in ps and in shell history; "
                "use --value-file F, or pipe the value on stdin");
}

int send_credential(const AdminClient& client, const CommandLine& cl, bool rotate) {
    const std::string& id = cl.positional[0];
    const std::string& name = cl.positional[1];
    Secret value = read_credential_value(cl);
    std::string body = credential_body(rotate ? "" : name, value);
    ScopedWipe wipe_body(body);
    auto response = rotate ? client.request("PUT", admin_target({"v1", "vaults", id, "credentials", name}), body)
                           : client.request("POST", admin_target({"v1", "vaults", id, "credentials"}), body);
    expect_status(response, rotate ? std::initializer_list<int>{200, 201, 204} : std::initializer_list<int>{200, 201},
                  client);
    if (cl.flag("--json")) return print_raw(response);
    json answer = response.body.empty() ? json::object() : parse_body(response, client);
    print_table({{"CREDENTIAL", "VERSION"}, {name, field(answer, "version")}});
    return 0;
}

int vault_remove(const AdminClient& client, const CommandLine& cl, const char* what) {
    const std::string& id = cl.positional[0];
    const std::string& item = cl.positional[1];
    bool credential = std::string_view(what) == "credential";
    auto response =
        client.request("DELETE", admin_target({"v1", "vaults", id, credential ? "credentials" : "services", item}));
    expect_status(response, {200, 204}, client);
    if (cl.flag("--json")) return print_raw(response);
    std::printf("removed %s %s from vault %s\n", what, item.c_str(), id.c_str());
    return 0;
}

int vault_add_credential(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 2, "vault add-credential ID NAME [--value-file F]");
    return send_credential(client, cl, false);
}

int vault_rotate(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 2, "vault rotate ID NAME [--value-file F]");
    return send_credential(client, cl, true);
}

int vault_remove_credential(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 2, "vault remove-credential ID NAME");
    return vault_remove(client, cl, "credential");
}

int vault_remove_service(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 2, "vault remove-service ID SID");
    return vault_remove(client, cl, "service");
}

int vault_add_service(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 1, "vault add-service ID --host H --auth TYPE --key K [...]");
    auto host = cl.value("--host");
    auto type = cl.value("--auth");
    auto key = cl.value("--key");
    if (!host) throw UsageError("add-service needs --host H");
    if (!type) throw UsageError("add-service needs --auth TYPE (api-key, bearer, basic, header or query)");
    if (!key) throw UsageError("add-service needs --key K, the name of the credential to inject");
    json auth = {{"type", *type}, {"key", *key}};
    for (const char* option : {"header", "user", "template", "param"})
        if (auto v = cl.value(std::string("--") + option)) auth[option] = *v;
    json body = {{"host", *host}, {"auth_config", auth}};
    if (auto port = cl.value("--port")) body["port"] = parse_number(*port, "--port", 1, 65535);
    if (auto prefix = cl.value("--path-prefix")) body["path_prefix"] = *prefix;
    if (cl.flag("--redact-response")) body["redact_response"] = true;

    auto response = client.request("POST", admin_target({"v1", "vaults", cl.positional[0], "services"}), body.dump());
    expect_status(response, {200, 201}, client);
    if (cl.flag("--json")) return print_raw(response);
    json s = parse_body(response, client);
    json a = s.is_object() && s.contains("auth_config") ? s["auth_config"] : auth;
    print_table({{"SERVICE", "HOST", "PORT", "PATH", "AUTH", "KEY", "REDACT"},
                 {field(s, "id"), field(s, "host"), field(s, "port"), field(s, "path_prefix"), field(a, "type"),
                  field(a, "key"), field(s, "redact_response")}});
    return 0;
}

// ---- session ----------------------------------------------------------------

int session_create(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 0, "session create --vault ID [--vault ID ...] [--ttl SECONDS] [...]");
    auto vaults = cl.values("--vault");
    if (vaults.empty()) throw UsageError("at least one --vault ID is required");
    auto domains = cl.values("--allow-domain");
    auto policy = cl.value("--policy");
    if (policy && !domains.empty()) throw UsageError("give --policy NAME or --allow-domain D, not both");

    json body = {{"vault_ids", vaults}};
    if (auto ttl = cl.value("--ttl")) body["ttl_seconds"] = parse_number(*ttl, "--ttl", 1, 365ull * 24 * 3600);
    if (!domains.empty())
        body["egress_policy"] = {{"allow_https", true}, {"allowed_domains", domains}};
    else if (policy)
        body["egress_policy"] = *policy;
    if (auto source = cl.value("--source")) body["source"] = *source;

    auto response = client.request("POST", "/v1/sessions", body.dump());
    expect_status(response, {200, 201}, client);
    if (cl.flag("--json")) return print_raw(response);
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

int session_delete(const AdminClient& client, const CommandLine& cl) {
    expect_positionals(cl, 1, "session delete ID");
    auto response = client.request("DELETE", admin_target({"v1", "sessions", cl.positional[0]}));
    expect_status(response, {200, 204}, client);
    if (cl.flag("--json")) return print_raw(response);
    std::printf("deleted session %s\n", cl.positional[0].c_str());
    return 0;
}

// ---- logs -------------------------------------------------------------------

// ts session ingress method host:port path status ms
std::string log_line(const json& e) {
    std::string target = field(e, "host");
    if (target.find(':') != std::string::npos) target = "[" + target + "]";
    if (e.contains("port") && !e["port"].is_null()) target += ":" + field(e, "port");
    return field(e, "ts") + " " + field(e, "session") + " " + field(e, "ingress") + " " + field(e, "method") + " " +
           target + " " + field(e, "path") + " " + field(e, "status") + " " + field(e, "ms");
}

// Oldest first, whatever order the server keeps: a log reads downwards.
std::vector<json> sorted_entries(const json& body) {
    json items = items_of(body, "entries");
    if (items.empty()) items = items_of(body, "logs");
    std::vector<json> entries(items.begin(), items.end());
    std::stable_sort(entries.begin(), entries.end(),
                     [](const json& a, const json& b) { return field(a, "ts") < field(b, "ts"); });
    return entries;
}

volatile std::sig_atomic_t follow_stopped = 0;

extern "C" void stop_following(int) {
    follow_stopped = 1;
    // A second Ctrl-C ends the process at once, even inside a slow request.
    std::signal(SIGINT, SIG_DFL);
}

int logs_follow(const AdminClient& client, const CommandLine& cl, const std::string& target) {
    std::signal(SIGINT, stop_following);
    // Entries seen in the previous answer, counted: two identical lines are two
    // requests, and only the ones not already printed are new.
    std::map<std::string, int> previous;
    std::string last_problem;
    for (bool first = true; !follow_stopped; first = false) {
        try {
            auto response = client.request("GET", target);
            expect_status(response, {200}, client);
            std::map<std::string, int> current;
            for (const auto& entry : sorted_entries(parse_body(response, client))) {
                std::string line = cl.flag("--json") ? entry.dump() : log_line(entry);
                ++current[line];
                if (auto it = previous.find(line); it != previous.end() && it->second > 0) {
                    --it->second;
                    continue;
                }
                std::printf("%s\n", line.c_str());
            }
            std::fflush(stdout);
            previous = std::move(current);
            last_problem.clear();
        } catch (const std::runtime_error& e) {
            // Once it has started, a restarting server is waited for, not fatal.
            if (first) throw;
            if (e.what() != last_problem) std::fprintf(stderr, "vaultgate: %s (retrying)\n", e.what());
            last_problem = e.what();
        }
        for (int i = 0; i < 10 && !follow_stopped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return 0;
}

}  // namespace

int vault_command(const Args& args) {
    static const char* usage =
        "usage: vaultgate vault create NAME | list | show ID | add-credential ID NAME [--value-file F] | "
        "rotate ID NAME [--value-file F] | remove-credential ID NAME | add-service ID --host H ... | "
        "remove-service ID SID";
    auto [sub, rest] = split_subcommand(args);
    OptionSpec spec = admin_options;
    int (*run)(const AdminClient&, const CommandLine&) = nullptr;
    if (sub == "create") {
        run = vault_create;
    } else if (sub == "list") {
        run = vault_list;
    } else if (sub == "show") {
        run = vault_show;
    } else if (sub == "add-credential" || sub == "rotate") {
        refuse_value_option(rest);
        spec = with_admin({"--value-file"});
        run = sub == "rotate" ? vault_rotate : vault_add_credential;
    } else if (sub == "remove-credential") {
        run = vault_remove_credential;
    } else if (sub == "remove-service") {
        run = vault_remove_service;
    } else if (sub == "add-service") {
        spec = with_admin(
            {"--host", "--port", "--path-prefix", "--auth", "--key", "--header", "--user", "--template", "--param"},
            {"--redact-response"});
        run = vault_add_service;
    } else {
        throw UsageError(sub.empty() ? usage : "unknown vault command '" + sub + "'; " + usage);
    }
    CommandLine cl = parse_command_line(rest, spec);
    AdminClient client = admin_client_from(cl);
    return report_api_errors([&] { return run(client, cl); });
}

int session_command(const Args& args) {
    static const char* usage =
        "usage: vaultgate session create --vault ID [--vault ID ...] [--ttl SECONDS] [--policy NAME | "
        "--allow-domain D ...] [--source CIDR] | delete ID";
    auto [sub, rest] = split_subcommand(args);
    OptionSpec spec = admin_options;
    int (*run)(const AdminClient&, const CommandLine&) = nullptr;
    if (sub == "create") {
        spec = with_admin({"--vault", "--ttl", "--policy", "--allow-domain", "--source"});
        run = session_create;
    } else if (sub == "delete") {
        run = session_delete;
    } else {
        throw UsageError(sub.empty() ? usage : "unknown session command '" + sub + "'; " + usage);
    }
    CommandLine cl = parse_command_line(rest, spec);
    AdminClient client = admin_client_from(cl);
    return report_api_errors([&] { return run(client, cl); });
}

int logs_command(const Args& args) {
    CommandLine cl = parse_command_line(args, with_admin({"--vault", "--session", "--limit"}, {"--follow"}));
    expect_positionals(cl, 0, "logs [--vault V] [--session S] [--limit N] [--follow] [--json]");
    AdminQuery query;
    if (auto v = cl.value("--vault")) query.emplace_back("vault", *v);
    if (auto s = cl.value("--session")) query.emplace_back("session", *s);
    if (auto n = cl.value("--limit"))
        query.emplace_back("limit", std::to_string(parse_number(*n, "--limit", 1, 1000000)));
    AdminClient client = admin_client_from(cl);
    const std::string target = admin_target({"v1", "logs"}, query);
    return report_api_errors([&] {
        if (cl.flag("--follow")) return logs_follow(client, cl, target);
        auto response = client.request("GET", target);
        expect_status(response, {200}, client);
        if (cl.flag("--json")) return print_raw(response);
        for (const auto& entry : sorted_entries(parse_body(response, client)))
            std::printf("%s\n", log_line(entry).c_str());
        return 0;
    });
}

void add_admin_commands(CLI::App& root, CommandRun& run) {
    add_self_parsed_command(root, "vault", "Manage vaults, credentials and services (admin API)", vault_command, run);
    add_self_parsed_command(root, "session", "Create and delete sessions (admin API)", session_command, run);
    add_self_parsed_command(root, "logs", "Read the recent access log (admin API)", logs_command, run);
}

}  // namespace vaultgate::cli
