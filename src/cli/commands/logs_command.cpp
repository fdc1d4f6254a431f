// `vaultgate logs`: the recent access log through the admin API, once or
// followed.
#include "cli/commands/admin_command.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>

namespace vaultgate::cli {

namespace {

using nlohmann::json;

struct LogsArgs {
    AdminConnection connection;
    OutputChoice output;
    std::string vault, session;
    std::uint64_t limit = 0;
    bool follow = false;
};

const Row log_header{"TIME", "SESSION", "VAULT", "INGRESS", "METHOD", "TARGET", "PATH", "STATUS", "REASON", "MS"};

Row log_row(const json& e) {
    std::string target = field(e, "host");
    if (target.find(':') != std::string::npos) target = "[" + target + "]";
    if (e.contains("port") && !e["port"].is_null()) target += ":" + field(e, "port");
    return {field(e, "ts"), field(e, "session"), field(e, "vault"),  field(e, "ingress"), field(e, "method"),
            target,         field(e, "path"),    field(e, "status"), field(e, "reason"),  field(e, "ms")};
}

// One line, fields one space apart: a followed log cannot know its widths.
std::string joined_row(const Row& row) {
    std::string line;
    for (const auto& cell : row) line += (line.empty() ? "" : " ") + cell;
    return line;
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

// Polls once a second. Each answer holds the last `limit` entries; only those
// not in the previous answer are printed (counted, so two identical lines are
// two requests), and only the previous answer is kept: memory stays bounded.
int logs_follow(const AdminClient& client, const LogsArgs& a, const std::string& target) {
    std::signal(SIGINT, stop_following);
    std::signal(SIGTERM, stop_following);
    std::map<std::string, int> previous;
    std::string last_problem;
    for (bool first = true; !follow_stopped; first = false) {
        try {
            auto response = client.request("GET", target);
            expect_status(response, {200}, client);
            json body = parse_body(response, client);
            if (first && !a.output.json()) std::printf("%s\n", joined_row(log_header).c_str());
            std::map<std::string, int> current;
            for (const auto& entry : sorted_entries(body)) {
                std::string line = a.output.json() ? entry.dump() : joined_row(log_row(entry));
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

int logs(const AdminClient& client, const LogsArgs& a) {
    AdminQuery query;
    if (!a.vault.empty()) query.emplace_back("vault", a.vault);
    if (!a.session.empty()) query.emplace_back("session", a.session);
    if (a.limit != 0) query.emplace_back("limit", std::to_string(a.limit));
    const std::string target = admin_target({"v1", "logs"}, query);
    if (a.follow) return logs_follow(client, a, target);
    auto response = client.request("GET", target);
    expect_status(response, {200}, client);
    if (a.output.json()) return print_raw(response);
    std::vector<Row> rows{log_header};
    for (const auto& entry : sorted_entries(parse_body(response, client))) rows.push_back(log_row(entry));
    print_table(rows);
    return 0;
}

}  // namespace

void add_logs_command(CLI::App& root, CommandRun& run) {
    auto args = std::make_shared<LogsArgs>();
    CLI::App* command = add_admin_leaf(root, "logs", "Read the recent access log (admin API)", args, logs, run);
    command->add_option("--vault", args->vault, "Entries of this vault (id or name)")->type_name("VAULT");
    command->add_option("--session", args->session, "Entries of this session")->type_name("ID");
    command->add_option("--limit", args->limit, "The last N entries (server default 100)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{10000}))
        ->type_name("N");
    command->add_flag("--follow", args->follow, "Print new entries as they come, until Ctrl-C")
        ->disable_flag_override();
}

}  // namespace vaultgate::cli
