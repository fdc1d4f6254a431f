#pragma once
// The client side of the admin API (docs/reference/admin-api.md) and the plumbing the
// admin subcommands and `bootstrap` share. Plain blocking POSIX sockets rather
// than Asio: these commands make a handful of requests to a local server, and
// the CLI should stay cheap to compile.
#include "cli/commands.hpp"
#include "vaultgate/util/encoding.hpp"  // percent_encode for path segments and query values
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

// ---- command lines ----------------------------------------------------------

// "--name VALUE" and "--name=VALUE" for options that take a value, bare flags,
// positionals; "--" ends the options. Anything else starting with "--" is a
// UsageError, so a mistyped option is never taken for a positional.
struct CommandLine {
    std::vector<std::string> positional;
    std::vector<std::pair<std::string, std::string>> options;   // in order, repeats kept
    std::vector<std::string> flags;

    std::optional<std::string> value(std::string_view name) const;   // the last one given
    std::vector<std::string> values(std::string_view name) const;
    bool flag(std::string_view name) const;
};

struct OptionSpec {
    std::vector<std::string_view> with_value;
    std::vector<std::string_view> flags;
};

// The options every admin command takes, beside its own.
inline const OptionSpec admin_options{{"--admin", "--token-file"}, {"--json"}};

CommandLine parse_command_line(const Args& args, const OptionSpec& spec);

// "vault --json list" and "vault list --json" alike: the first argument that is
// neither an admin option nor its value names the subcommand. Returns it (empty
// when there is none) and the arguments without it.
std::pair<std::string, Args> split_subcommand(const Args& args);

// A whole number in [min, max], else a UsageError naming the option.
std::uint64_t parse_number(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max);

// ---- the HTTP client --------------------------------------------------------

struct AdminEndpoint {
    std::string url;             // as given, for messages
    bool unix_socket = false;
    std::string socket_path;     // unix:PATH
    std::string host;            // http://HOST:PORT
    std::uint16_t port = 0;
    std::string host_header;
};

// "http://127.0.0.1:3190", "http://[::1]:3190", "http://localhost" (port 80),
// "unix:/run/vaultgate/admin.sock". Throws UsageError otherwise.
AdminEndpoint parse_admin_url(const std::string& url);

struct AdminResponse {
    int status = 0;
    std::string reason;
    std::string body;
};

class AdminClient {
public:
    AdminClient(AdminEndpoint endpoint, std::optional<Secret> token);

    // One request on its own connection, 30 s for all of it. Throws
    // std::runtime_error naming the URL when the server cannot be reached,
    // times out or answers with something that is not HTTP/1.1. The body is
    // sent as given; callers wipe bodies that carry a secret.
    AdminResponse request(std::string_view method, std::string_view target, std::string_view body = {}) const;

    const std::string& url() const { return endpoint_.url; }
    bool has_token() const { return token_.has_value(); }

private:
    AdminEndpoint endpoint_;
    std::optional<Secret> token_;
};

// The URL from --admin, else $VAULTGATE_ADMIN, else http://127.0.0.1:3190; the
// token from --token-file, else the file named by $VAULTGATE_ADMIN_TOKEN_FILE,
// else none (enough for a unix socket).
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
