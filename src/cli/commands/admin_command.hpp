#pragma once
// What the admin commands (vault, session, logs) share: how a leaf command is
// declared and run, and what it prints (a table by default, the server's JSON
// with --json or --output json). The server's shapes are read loosely, so that
// an added field or a number sent as a string does not break a listing.
#include "cli/admin_client.hpp"
#include "cli/admin_connection.hpp"
#include "cli/command_tree.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace vaultgate::cli {

using Row = std::vector<std::string>;

struct OutputChoice {
    std::string format = "table";  // --output table|json
    bool json_flag = false;        // --json, the same as --output json
    bool json() const { return json_flag || format == "json"; }
};

// Adds -o/--output json|table and --json to `command`.
void add_output_options(CLI::App& command, OutputChoice& output);

// A subcommand of `parent` with the admin connection and output options; once
// parsed, it opens the admin client and runs `action`, an API error giving
// "vaultgate: <code>: <message>" and exit 1. `Args` holds `connection` and
// `output`, shared by the parent's leaves (only one of them runs).
template <class Args>
CLI::App* add_admin_leaf(CLI::App& parent, const char* name, const char* description, const std::shared_ptr<Args>& args,
                         int (*action)(const AdminClient&, const Args&), CommandRun& run) {
    CLI::App* leaf = parent.add_subcommand(name, description);
    add_admin_options(*leaf, args->connection);
    add_output_options(*leaf, args->output);
    leaf->callback([args, action, &run] {
        run = [args, action] {
            AdminClient client = open_admin(args->connection);
            return report_api_errors([&] { return action(client, *args); });
        };
    });
    return leaf;
}

// Columns padded to the widest cell, two spaces apart.
void print_table(const std::vector<Row>& rows);

// A field as table text; "-" when absent, null or empty, so columns stay
// countable. Booleans are yes/no, other values their JSON text.
std::string field(const nlohmann::json& obj, const char* key);

// A list answer: a bare array, or an object holding the array under `key`.
nlohmann::json items_of(const nlohmann::json& body, const char* key);

// The body as the server sent it, ending in a newline; returns 0.
int print_raw(const AdminResponse& response);

}  // namespace vaultgate::cli
