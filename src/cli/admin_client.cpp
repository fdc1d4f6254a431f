#include "cli/admin_client.hpp"

#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/json_text.hpp"
#include "vaultgate/util/unique_fd.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <openssl/crypto.h>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace vaultgate::cli {

// ---- command lines ----------------------------------------------------------

std::optional<std::string> CommandLine::value(std::string_view name) const {
    std::optional<std::string> found;
    for (const auto& [n, v] : options)
        if (n == name) found = v;
    return found;
}

std::vector<std::string> CommandLine::values(std::string_view name) const {
    std::vector<std::string> found;
    for (const auto& [n, v] : options)
        if (n == name) found.push_back(v);
    return found;
}

bool CommandLine::flag(std::string_view name) const {
    return std::find(flags.begin(), flags.end(), name) != flags.end();
}

namespace {

bool listed(const std::vector<std::string_view>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

CommandLine parse_command_line(const Args& args, const OptionSpec& spec) {
    CommandLine out;
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (options_done || arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
            out.positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_done = true;
            continue;
        }
        // Only the name is ever quoted back: what follows "=" may be a value the
        // user did not mean to show.
        auto eq = arg.find('=');
        std::string name = arg.substr(0, eq);
        if (listed(spec.with_value, name)) {
            if (eq != std::string::npos) {
                out.options.emplace_back(name, arg.substr(eq + 1));
            } else {
                if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
                out.options.emplace_back(name, args[++i]);
            }
        } else if (listed(spec.flags, name)) {
            if (eq != std::string::npos) throw UsageError(name + " takes no value");
            out.flags.push_back(name);
        } else {
            throw UsageError("unknown option " + name);
        }
    }
    return out;
}

std::pair<std::string, Args> split_subcommand(const Args& args) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (listed(admin_options.with_value, arg)) {
            ++i;  // skip its value
            continue;
        }
        if (arg.rfind("--", 0) == 0) continue;
        Args rest(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
        rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
        return {arg, rest};
    }
    return {"", args};
}

std::uint64_t parse_number(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max) {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < min || n > max)
        throw UsageError(std::string(option) + " must be a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max));
    return n;
}

// ---- the HTTP client --------------------------------------------------------

AdminEndpoint parse_admin_url(const std::string& url) {
    AdminEndpoint ep;
    ep.url = url;
    if (url.rfind("unix:", 0) == 0) {
        ep.unix_socket = true;
        ep.socket_path = url.substr(5);
        if (ep.socket_path.empty()) throw UsageError("admin URL " + url + ": no socket path after unix:");
        if (ep.socket_path.size() >= sizeof(sockaddr_un::sun_path))
            throw UsageError("admin URL " + url + ": the socket path is too long");
        ep.host_header = "localhost";
        return ep;
    }
    if (url.rfind("http://", 0) != 0)
        throw UsageError("admin URL " + url + ": expected http://HOST:PORT or unix:PATH");
    std::string authority = url.substr(7);
    if (auto slash = authority.find('/'); slash != std::string::npos) {
        if (authority.find_first_not_of('/', slash) != std::string::npos)
            throw UsageError("admin URL " + url + ": give the server's address only, without a path");
        authority.resize(slash);
    }
    std::string port_text;
    if (!authority.empty() && authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string::npos) throw UsageError("admin URL " + url + ": unclosed [");
        ep.host = authority.substr(1, close - 1);
        std::string after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':') throw UsageError("admin URL " + url + ": bad port");
        if (!after.empty()) port_text = after.substr(1);
    } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
        ep.host = authority.substr(0, colon);
        port_text = authority.substr(colon + 1);
    } else {
        ep.host = authority;
    }
    if (ep.host.empty()) throw UsageError("admin URL " + url + ": no host");
    ep.port = port_text.empty() ? 80 : static_cast<std::uint16_t>(parse_number(port_text, "admin URL port", 1, 65535));
    ep.host_header = authority;
    return ep;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto request_timeout = std::chrono::seconds(30);
constexpr std::size_t max_line = 64 * 1024;
constexpr std::size_t max_body = 64 * 1024 * 1024;

// One connection to the admin API, every wait bounded by the same deadline.
class Connection {
public:
    Connection(UniqueFd fd, Clock::time_point deadline, const std::string& url)
        : fd_(std::move(fd)), deadline_(deadline), url_(url) {}

    void write_all(std::string_view data) {
        while (!data.empty()) {
            ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
            if (n > 0) {
                data.remove_prefix(static_cast<std::size_t>(n));
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                wait(POLLOUT);
            } else if (n < 0 && errno != EINTR) {
                fail(std::string("sending the request failed: ") + std::strerror(errno));
            }
        }
    }

    // The next line without its CRLF (a bare LF is tolerated).
    std::string read_line() {
        for (;;) {
            auto nl = buffer_.find('\n', pos_);
            if (nl != std::string::npos) {
                std::string line = buffer_.substr(pos_, nl - pos_);
                pos_ = nl + 1;
                if (!line.empty() && line.back() == '\r') line.pop_back();
                return line;
            }
            if (buffer_.size() - pos_ > max_line) fail("a response line is longer than 64 KiB");
            if (!fill()) fail("the connection closed in the middle of the response");
        }
    }

    void read_exact(std::size_t n, std::string& out) {
        while (buffer_.size() - pos_ < n)
            if (!fill()) fail("the connection closed in the middle of the response body");
        out.append(buffer_, pos_, n);
        pos_ += n;
    }

    void read_to_end(std::string& out) {
        do {
            out.append(buffer_, pos_, std::string::npos);
            buffer_.clear();
            pos_ = 0;
            if (out.size() > max_body) fail("the response body is larger than 64 MiB");
        } while (fill());
    }

    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error("admin API at " + url_ + ": " + why);
    }

private:
    bool fill() {
        if (pos_ > 0 && pos_ == buffer_.size()) {
            buffer_.clear();
            pos_ = 0;
        }
        char chunk[16 * 1024];
        for (;;) {
            ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
            if (n > 0) {
                buffer_.append(chunk, static_cast<std::size_t>(n));
                return true;
            }
            if (n == 0) return false;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                wait(POLLIN);
            else if (errno != EINTR)
                fail(std::string("reading the response failed: ") + std::strerror(errno));
        }
    }

    void wait(short events) {
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
            if (left <= 0) fail("no answer within 30 s");
            pollfd p{fd_.get(), events, 0};
            int r = ::poll(&p, 1, static_cast<int>(left));
            if (r > 0) return;
            if (r < 0 && errno != EINTR) fail(std::string("poll failed: ") + std::strerror(errno));
        }
    }

    UniqueFd fd_;
    Clock::time_point deadline_;
    const std::string& url_;
    std::string buffer_;
    std::size_t pos_ = 0;
};

[[noreturn]] void cannot_connect(const AdminEndpoint& ep, int error) {
    throw std::runtime_error("cannot connect to the admin API at " + ep.url + ": " + std::strerror(error));
}

// Waits for a non-blocking connect to finish; returns 0 or the errno it failed with.
int finish_connect(int fd, Clock::time_point deadline) {
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return ETIMEDOUT;
        pollfd p{fd, POLLOUT, 0};
        int r = ::poll(&p, 1, static_cast<int>(left));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return ETIMEDOUT;
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
        return err;
    }
}

UniqueFd connect_unix(const AdminEndpoint& ep) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) cannot_connect(ep, errno);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, ep.socket_path.data(), ep.socket_path.size());
    // A local socket connects at once or not at all, so a blocking connect is fine.
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) cannot_connect(ep, errno);
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
    return fd;
}

UniqueFd connect_tcp(const AdminEndpoint& ep, Clock::time_point deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    std::string port = std::to_string(ep.port);
    if (int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &found); rc != 0)
        throw std::runtime_error("cannot connect to the admin API at " + ep.url + ": " + ::gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(found, &::freeaddrinfo);
    int last_error = ECONNREFUSED;
    for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
        UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
        if (fd.get() < 0) {
            last_error = errno;
            continue;
        }
        int err = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
        if (err == EINPROGRESS) err = finish_connect(fd.get(), deadline);
        if (err == 0) return fd;
        last_error = err;
    }
    cannot_connect(ep, last_error);
}

bool header_is(std::string_view line, std::string_view name, std::string& value) {
    if (line.size() <= name.size() || line[name.size()] != ':') return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
    std::string_view v = line.substr(name.size() + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    value.assign(v);
    return true;
}

void read_chunked(Connection& conn, std::string& body) {
    for (;;) {
        std::string line = conn.read_line();
        std::size_t size = 0;
        std::string_view digits(line);
        digits = digits.substr(0, digits.find(';'));
        while (!digits.empty() && (digits.back() == ' ' || digits.back() == '\t')) digits.remove_suffix(1);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
            conn.fail("bad chunk size in the response");
        if (size == 0) {
            while (!conn.read_line().empty()) {
            }  // trailers: nothing in them matters here
            return;
        }
        if (size > max_body || body.size() + size > max_body) conn.fail("the response body is larger than 64 MiB");
        conn.read_exact(size, body);
        if (!conn.read_line().empty()) conn.fail("a chunk is not followed by CRLF");
    }
}

AdminResponse read_response(Connection& conn, std::string_view method) {
    for (;;) {
        AdminResponse response;
        std::string status_line = conn.read_line();
        if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ')
            conn.fail("the answer is not HTTP/1.x");
        auto [end, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, response.status);
        if (ec != std::errc() || end != status_line.data() + 12 || response.status < 100)
            conn.fail("bad status line in the response");
        response.reason = status_line.size() > 13 ? status_line.substr(13) : "";

        bool chunked = false;
        std::optional<std::size_t> length;
        for (std::string line; !(line = conn.read_line()).empty();) {
            std::string value;
            if (header_is(line, "transfer-encoding", value)) {
                chunked = value.find("chunked") != std::string::npos;
            } else if (header_is(line, "content-length", value)) {
                std::size_t n = 0;
                auto [e, err] = std::from_chars(value.data(), value.data() + value.size(), n);
                if (err != std::errc() || e != value.data() + value.size()) conn.fail("bad Content-Length");
                length = n;
            }
        }
        // An interim answer (100 Continue) is followed by the real one.
        if (response.status < 200 && response.status != 101) continue;
        if (method == "HEAD" || response.status == 204 || response.status == 304) return response;
        if (chunked) {
            read_chunked(conn, response.body);
        } else if (length) {
            if (*length > max_body) conn.fail("the response body is larger than 64 MiB");
            conn.read_exact(*length, response.body);
        } else {
            conn.read_to_end(response.body);
        }
        return response;
    }
}

}  // namespace

AdminClient::AdminClient(AdminEndpoint endpoint, std::optional<Secret> token)
    : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

AdminResponse AdminClient::request(std::string_view method, std::string_view target, std::string_view body) const {
    auto deadline = Clock::now() + request_timeout;
    UniqueFd fd = endpoint_.unix_socket ? connect_unix(endpoint_) : connect_tcp(endpoint_, deadline);
    Connection conn(std::move(fd), deadline, endpoint_.url);

    // The head carries the token: built in place and wiped once sent.
    std::string head;
    head.reserve(512 + (token_ ? token_->size() : 0));
    head.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
    head.append("Host: ").append(endpoint_.host_header).append("\r\n");
    head.append("User-Agent: vaultgate/" VAULTGATE_VERSION "\r\n");
    head.append("Accept: application/json\r\n");
    if (token_) head.append("Authorization: Bearer ").append(token_->reveal()).append("\r\n");
    if (!body.empty()) head.append("Content-Type: application/json\r\n");
    if (!body.empty() || method != "GET") head.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
    head.append("Connection: close\r\n\r\n");
    {
        ScopedWipe wipe_head(head);
        conn.write_all(head);
    }
    try {
        conn.write_all(body);
    } catch (const std::runtime_error&) {
        // A server may refuse early (401, 413) and close before reading the
        // body; its answer says more than the broken pipe does.
        try {
            return read_response(conn, method);
        } catch (const std::runtime_error&) {
        }
        throw;
    }
    return read_response(conn, method);
}

AdminClient admin_client_from(const CommandLine& command_line) {
    std::string url = "http://127.0.0.1:3190";
    if (auto given = command_line.value("--admin")) {
        url = *given;
    } else if (const char* env = std::getenv("VAULTGATE_ADMIN"); env != nullptr && *env != '\0') {
        url = env;
    }
    std::optional<std::string> token_file = command_line.value("--token-file");
    if (!token_file)
        if (const char* env = std::getenv("VAULTGATE_ADMIN_TOKEN_FILE"); env != nullptr && *env != '\0')
            token_file = env;
    std::optional<Secret> token;
    if (token_file) {
        std::string text = read_admin_token_file(*token_file, "token file");
        token.emplace(std::move(text));
        wipe_string(text);
    }
    return AdminClient(parse_admin_url(url), std::move(token));
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
        if (e.problem() == SecretFileError::Problem::read) throw std::runtime_error("reading " + where + ": " + e.reason());
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
