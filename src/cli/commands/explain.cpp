// `vaultgate explain [--session ID] URL`: what vaultgate would do with a
// request, asked of the running server (POST /v1/explain) so that the answer
// comes from the proxy's own rules, state and resolver. Nothing is sent to
// the destination.
#include "cli/commands/admin_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::cli {

namespace {

using nlohmann::json;

struct ExplainArgs {
    std::string url;
    std::string session;
    std::string method;
    AdminConnection connection;
    OutputChoice output;
};

// A string member as text; `fallback` when absent, null or empty.
std::string text(const json& obj, const char* key, const std::string& fallback = "-") {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
    const json& v = obj[key];
    if (v.is_string()) return v.get_ref<const std::string&>().empty() ? fallback : v.get<std::string>();
    return v.dump();
}

// "allowed_domains: api.x.com", "allowed_domains (no rule matches)".
std::string decided_by(const json& key) {
    const std::string name = text(key, "key");
    const std::string value = text(key, "value", "");
    if (!value.empty()) return name + ": " + value;
    if (name == "allowed_domains" || name == "allowed_cidrs") return name + " (no entry matches)";
    if (name == "sessions.default") return name + " (none configured)";
    return name;
}

std::string request_line(const json& request) {
    std::string host = text(request, "host");
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    return text(request, "method") + " " + text(request, "scheme") + "://" + host + ":" + text(request, "port") +
           text(request, "path", "/");
}

// "credential KEY", or "credentials A, B" for a type that reads several.
std::string credential_names(const json& b) {
    const auto it = b.find("credentials");
    if (it == b.end() || !it->is_array() || it->size() < 2) return "credential " + text(b, "credential");
    std::string names;
    for (const auto& name : *it) names += (names.empty() ? "" : ", ") + (name.is_string() ? name.get<std::string>() : "?");
    return "credentials " + names;
}

std::string binding_line(const json& b) {
    if (!b.is_object()) return "-";
    std::string line = "vault " + text(b, "vault");
    if (text(b, "vault_id") != text(b, "vault")) line += " (" + text(b, "vault_id") + ")";
    line += ", service " + text(b, "service") + " (" + text(b, "host") + ":" + text(b, "port") + " " +
            text(b, "path_prefix") + "): " + text(b, "auth_type") + " with " + credential_names(b);
    line += b.value("credential_set", false) ? "" : " (not set)";
    if (b.value("redact_response", false)) line += ", responses redacted";
    return line;
}

void print_line(const char* label, const std::string& value) { std::printf("%-12s%s\n", label, value.c_str()); }

void print_addresses(const json& addresses) {
    if (!addresses.is_array() || addresses.empty()) return;
    std::size_t address_width = std::string("ADDRESS").size();
    std::size_t class_width = std::string("CLASS").size();
    for (const auto& a : addresses) {
        address_width = std::max(address_width, text(a, "address").size());
        class_width = std::max(class_width, text(a, "class").size());
    }
    const int aw = static_cast<int>(address_width);
    const int cw = static_cast<int>(class_width);
    std::printf("\n%-*s  %-*s  %-7s  %s\n", aw, "ADDRESS", cw, "CLASS", "ALLOWED", "DECIDED BY");
    for (const auto& a : addresses) {
        const bool allowed = a.value("allowed", false);
        std::string why = decided_by(a.value("decided_by", json::object()));
        if (!allowed) why += " (" + text(a, "reason") + ")";
        std::printf("%-*s  %-*s  %-7s  %s\n", aw, text(a, "address").c_str(), cw, text(a, "class").c_str(),
                    allowed ? "yes" : "no", why.c_str());
    }
}

void print_explanation(const json& e) {
    std::string action = text(e, "action");
    if (e.contains("status") && !e["status"].is_null())
        action += " (" + text(e, "status") + " " + text(e, "reason", "") + ")";
    print_line("ACTION", action);
    print_line("DECIDED BY", decided_by(e.value("decided_by", json::object())));
    print_line("REQUEST", request_line(e.value("request", json::object())));
    std::string session = text(e, "session", "none");
    if (e.contains("session") && !e["session"].is_null()) session += ", egress policy " + text(e, "policy", "(inline)");
    print_line("SESSION", session);
    print_line("BINDING", binding_line(e.value("binding", json())));
    const json resolution = e.value("resolution", json());
    if (resolution.is_object()) {
        std::string resolved = text(resolution, "source");
        if (const std::string error = text(resolution, "error", ""); !error.empty()) resolved += " (" + error + ")";
        print_line("RESOLVED BY", resolved);
    }
    if (e.contains("advice") && !e["advice"].is_null()) print_line("ADVICE", text(e, "advice"));
    print_addresses(e.value("addresses", json::array()));
}

int run_explain(const ExplainArgs& a) {
    const AdminClient client = open_admin(a.connection);

    json body{{"url", a.url}};
    if (!a.session.empty()) body["session"] = a.session;
    if (!a.method.empty()) body["method"] = a.method;
    return report_api_errors([&] {
        const AdminResponse response = client.request("POST", "/v1/explain", body.dump());
        expect_status(response, {200}, client);
        if (a.output.json()) return print_raw(response);
        print_explanation(parse_body(response, client));
        return 0;
    });
}

}  // namespace

void add_explain_command(CLI::App& root, CommandRun& run) {
    auto args = std::make_shared<ExplainArgs>();
    CLI::App* cmd = root.add_subcommand(
        "explain", "Say what vaultgate would do with a request (mitm, tunnel or denied, and why), sending nothing");
    cmd->add_option("url", args->url, "https://host[:port]/path or http://host[:port]/path")
        ->required()
        ->type_name("URL");
    cmd->add_option("--session", args->session, "The session to decide for (default: the default session)")
        ->type_name("ID");
    cmd->add_option("--method", args->method, "The request's method (default: GET)")->type_name("METHOD");
    add_admin_options(*cmd, args->connection);
    add_output_options(*cmd, args->output);
    cmd->callback([args, &run] { run = [args] { return run_explain(*args); }; });
}

}  // namespace vaultgate::cli
