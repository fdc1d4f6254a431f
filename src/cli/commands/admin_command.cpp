#include "cli/commands/admin_command.hpp"

#include <algorithm>
#include <cstdio>

namespace vaultgate::cli {

using nlohmann::json;

void add_output_options(CLI::App& command, OutputChoice& output) {
    command.add_option("-o,--output", output.format, "Print a table or the server's JSON")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str()
        ->type_name("table|json");
    command.add_flag("--json", output.json_flag, "The same as --output json")->disable_flag_override();
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

std::string field(const json& obj, const char* key) {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return "-";
    const json& v = obj[key];
    if (v.is_string()) return v.get_ref<const std::string&>().empty() ? "-" : v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    return v.dump();
}

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

}  // namespace vaultgate::cli
