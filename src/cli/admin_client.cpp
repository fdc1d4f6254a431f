#include "cli/admin_client.hpp"
#include "cli/admin_connection.hpp"

#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/json_text.hpp"
#include "vaultgate/util/unique_fd.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <openssl/crypto.h>

#include <fcntl.h>
#include <unistd.h>

namespace vaultgate::cli {

AdminClient admin_client_from(const CommandLine& command_line) {
    AdminConnection connection;
    connection.admin = command_line.value("--admin").value_or("");
    connection.token_file = command_line.value("--token-file").value_or("");
    return open_admin(connection);
}

// ---- answers ---------------------------------------------------------------

void expect_status(const AdminResponse& response, std::initializer_list<int> expected, const AdminClient& client) {
    if (std::find(expected.begin(), expected.end(), response.status) != expected.end()) return;
    std::string code = "http_" + std::to_string(response.status);
    std::string message = response.reason.empty() ? "unexpected answer" : response.reason;
    auto j = nlohmann::json::parse(response.body, nullptr, false);
    if (j.is_object() && j.contains("error")) {
        const auto& e = j["error"];
        if (e.is_object()) {
            if (e.contains("code") && e["code"].is_string()) code = e["code"].get<std::string>();
            if (e.contains("message") && e["message"].is_string()) message = e["message"].get<std::string>();
        } else if (e.is_string()) {
            code = e.get<std::string>();
        }
    }
    if (response.status == 401 && !client.has_token())
        message += " (no token was sent: give --token-file F or set VAULTGATE_ADMIN_TOKEN_FILE)";
    throw ApiError(code, message);
}

nlohmann::json parse_body(const AdminResponse& response, const AdminClient& client) {
    auto j = nlohmann::json::parse(response.body, nullptr, false);
    if (j.is_discarded())
        throw std::runtime_error("admin API at " + client.url() + ": the answer to a request is not JSON");
    return j;
}

int report_api_errors(const std::function<int()>& command) {
    try {
        return command();
    } catch (const ApiError& e) {
        std::fprintf(stderr, "vaultgate: %s: %s\n", e.code.c_str(), e.what());
        return 1;
    }
}

// ---- secrets on the way through ---------------------------------------------

namespace {

// Far above what the admin API takes (1 MiB bodies); it only stops an endless
// source such as /dev/zero.
constexpr std::size_t max_input_bytes = std::size_t{64} << 20;

}  // namespace

std::string read_all_wiping(int fd, std::string_view what, Whitespace whitespace) {
    try {
        return read_secret_fd(fd, std::string(what), {max_input_bytes, whitespace, /*regular_file_only=*/false});
    } catch (const SecretFileError& e) {
        throw std::runtime_error("reading " + std::string(what) + ": " + e.reason());
    }
}

std::string read_file_wiping(const std::string& path, std::string_view what, Whitespace whitespace) {
    const std::string where = std::string(what) + " " + path;
    try {
        // Not only regular files: "--value-file <(pass show x)" is a pipe.
        return read_secret_file(path, {max_input_bytes, whitespace, /*regular_file_only=*/false});
    } catch (const SecretFileError& e) {
        if (e.problem() == SecretFileError::Problem::read)
            throw std::runtime_error("reading " + where + ": " + e.reason());
        throw UsageError(where + ": " + e.reason());
    }
}

std::string credential_body(std::string_view name, const Secret& value) {
    // JSON carries text only; replacing bytes would silently change the secret.
    if (!is_valid_utf8(value.reveal()))
        throw UsageError("the credential value is not valid UTF-8 text, which the admin API (JSON) cannot carry");
    std::string body;
    // Worst case: every byte escaped as \u00XX, plus the fixed text.
    body.reserve(32 + 6 * (name.size() + value.size()));
    body += '{';
    if (!name.empty()) {
        body += "\"name\":";
        append_json_string(body, name);
        body += ',';
    }
    body += "\"value\":";
    append_json_string(body, value.reveal());
    body += '}';
    return body;
}

}  // namespace vaultgate::cli
