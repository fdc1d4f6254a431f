#pragma once
// The client side of the admin API (docs/reference/admin-api.md) and the plumbing the
// admin subcommands and `bootstrap` share. The transport (admin_http.cpp) is
// Boost.Beast on a private io_context: each request runs to completion before
// request() returns, so callers stay plain blocking code.
#include "cli/command_line.hpp"
#include "vaultgate/util/secret.hpp"
#include "vaultgate/util/secret_file.hpp"  // Whitespace

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate::cli {

// ---- the HTTP client --------------------------------------------------------

struct AdminEndpoint {
    std::string url;  // as given, for messages
    bool unix_socket = false;
    std::string socket_path;  // unix:PATH
    std::string host;         // http://HOST:PORT
    std::uint16_t port = 0;
    std::string host_header;
};

// "http://127.0.0.1:3190", "http://[::1]:3190", "http://localhost" (port 80),
// "unix:/run/vaultgate/admin.sock". Throws UsageError otherwise.
AdminEndpoint parse_admin_url(const std::string& url);

using AdminQuery = std::vector<std::pair<std::string, std::string>>;

// "/v1/vaults/ID/credentials" from {"v1", "vaults", id, "credentials"}: each
// segment, query name and value percent-encoded (all but unreserved characters).
std::string admin_target(std::initializer_list<std::string_view> segments, const AdminQuery& query = {});

struct AdminResponse {
    int status = 0;
    std::string reason;
    std::string body;
};

class AdminClient {
public:
    AdminClient(AdminEndpoint endpoint, std::optional<Secret> token);

    // One request on its own connection, 30 s for all of it, a response body
    // of at most 64 MiB. Throws std::runtime_error naming the URL (never the
    // token) when the server cannot be reached, times out or answers with
    // something that is not HTTP/1.x. The body is sent from the caller's
    // buffer; callers wipe bodies that carry a secret.
    //
    // The token: the "Bearer" line is built in a buffer wiped at once, and
    // Beast's copy in the request's fields is allocated through an allocator
    // that wipes on free, and freed as soon as the head is sent. Out of reach:
    // the kernel's socket buffers, and the Secret itself, which lives (and is
    // wiped) with the client.
    AdminResponse request(std::string_view method, std::string_view target, std::string_view body = {}) const;

    const std::string& url() const { return endpoint_.url; }
    bool has_token() const { return token_.has_value(); }

private:
    AdminEndpoint endpoint_;
    std::optional<Secret> token_;
};

// open_admin (cli/admin_connection.hpp) for the --admin and --token-file of a
// command that still reads its own arguments.
AdminClient admin_client_from(const CommandLine& command_line);

// ---- answers ---------------------------------------------------------------

// The API's {"error":{"code","message"}}, or "http_<status>" and the reason
// phrase when the body is not of that form.
struct ApiError : std::runtime_error {
    ApiError(std::string code, const std::string& message) : std::runtime_error(message), code(std::move(code)) {}
    std::string code;
};

// Throws ApiError unless the status is one of `expected`.
void expect_status(const AdminResponse& response, std::initializer_list<int> expected, const AdminClient& client);

// The body as JSON; a std::runtime_error naming the URL when it is not.
nlohmann::json parse_body(const AdminResponse& response, const AdminClient& client);

// Runs a command; an ApiError becomes "vaultgate: <code>: <message>" and exit 1.
int report_api_errors(const std::function<int()>& command);

// ---- secrets on the way through ---------------------------------------------

// Wipes a string when the scope ends, also when a request throws.
class ScopedWipe {
public:
    explicit ScopedWipe(std::string& s) : s_(s) {}
    ~ScopedWipe() { wipe_string(s_); }
    ScopedWipe(const ScopedWipe&) = delete;
    ScopedWipe& operator=(const ScopedWipe&) = delete;

private:
    std::string& s_;
};

// Reads to end of file through util/secret_file.hpp (a wiped buffer, no copy
// left in freed memory), with the whitespace rule the caller names. Throws
// std::runtime_error on a read error.
std::string read_all_wiping(int fd, std::string_view what, Whitespace whitespace);

// The whole file, read as read_all_wiping does (a pipe is fine too); a
// UsageError naming `what` and the path when it cannot be opened.
std::string read_file_wiping(const std::string& path, std::string_view what, Whitespace whitespace);

// {"name":NAME,"value":VALUE}, or {"value":VALUE} when name is empty, built in
// one reserved buffer. The caller wipes it after sending.
std::string credential_body(std::string_view name, const Secret& value);

}  // namespace vaultgate::cli
