// The admin listener on the wire, over TCP and the unix socket: every reply's
// status line carries its status's reason phrase, and a 204 has no body and no
// body fields. A raw socket reads the bytes exactly as the listener wrote them.
#include "net/admin/admin_listener.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <thread>

namespace vaultgate::test {
namespace {

constexpr const char* token = "wire-test-token-0123456789abcdef";

// "/status/NNN" answers NNN, as the admin API would: a JSON body, nothing at
// all for 204, and an Allow field for 405.
AdminResponse answer(const AdminRequest& request) {
    constexpr std::string_view prefix = "/status/";
    int status = 404;
    if (request.path.starts_with(prefix)) {
        const auto digits = std::string_view(request.path).substr(prefix.size());
        std::from_chars(digits.data(), digits.data() + digits.size(), status);
    }
    AdminResponse response;
    response.status = status;
    if (status == 204) {
        response.content_type.clear();
        return response;
    }
    response.body = R"({"status":)" + std::to_string(status) + "}";
    if (status == 405) response.headers.emplace_back("Allow", "GET");
    return response;
}

// An admin listener with its own thread, on 127.0.0.1:0 or a unix socket.
class ListenerUnderTest {
public:
    explicit ListenerUnderTest(ListenAddress address, std::optional<std::string> bearer)
        : listener_(ioc_, std::move(address), answer, std::move(bearer), net::AdminLimits{}) {
        listener_.start();
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~ListenerUnderTest() {
        net::asio::post(ioc_, [this] { listener_.close(); });
        ioc_.stop();
        thread_.join();
    }
    std::uint16_t port() const { return listener_.tcp_endpoint()->port(); }

private:
    net::asio::io_context ioc_{1};
    net::AdminListener listener_;
    std::thread thread_;
};

// Sends `request` on a fresh connection and returns every byte until the
// listener closes it (requests say "Connection: close").
std::string exchange(int fd, const std::string& request) {
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

std::string tcp_exchange(std::uint16_t port, const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return exchange(fd, request);
}

std::string unix_exchange(const std::string& path, const std::string& request) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return exchange(fd, request);
}

std::string request_for(const std::string& method, const std::string& path, bool with_token,
                        const std::string& extra = "") {
    std::string r = method + " " + path + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
    if (with_token) r += "Authorization: Bearer " + std::string(token) + "\r\n";
    return r + extra + "\r\n";
}

std::string status_line(const std::string& reply) { return reply.substr(0, reply.find("\r\n")); }
std::string head_of(const std::string& reply) { return reply.substr(0, reply.find("\r\n\r\n") + 2); }
std::string body_of(const std::string& reply) {
    const auto end = reply.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : reply.substr(end + 4);
}

ListenAddress tcp_address() {
    ListenAddress a;
    a.host = "127.0.0.1";
    a.port = 0;
    return a;
}

ListenAddress unix_address(const std::string& path) {
    ListenAddress a;
    a.unix_path = path;
    return a;
}

const std::pair<int, const char*> handler_statuses[] = {
    {200, "HTTP/1.1 200 OK"},          {201, "HTTP/1.1 201 Created"},   {204, "HTTP/1.1 204 No Content"},
    {400, "HTTP/1.1 400 Bad Request"}, {404, "HTTP/1.1 404 Not Found"}, {405, "HTTP/1.1 405 Method Not Allowed"},
};

TEST(AdminWire, EveryStatusLineCarriesItsReasonPhraseOverTcp) {
    ListenerUnderTest listener(tcp_address(), std::string(token));
    for (const auto& [status, line] : handler_statuses) {
        const auto reply = tcp_exchange(listener.port(), request_for("GET", "/status/" + std::to_string(status), true));
        EXPECT_EQ(status_line(reply), line) << reply;
    }
    // The listener's own refusals: no token, and a body over the limit.
    const auto unauthorised = tcp_exchange(listener.port(), request_for("GET", "/status/200", false));
    EXPECT_EQ(status_line(unauthorised), "HTTP/1.1 401 Unauthorized") << unauthorised;
    EXPECT_NE(head_of(unauthorised).find("WWW-Authenticate: Bearer realm=\"vaultgate\"\r\n"), std::string::npos);
    const auto too_large =
        tcp_exchange(listener.port(), request_for("POST", "/status/201", true, "Content-Length: 2000000\r\n"));
    EXPECT_EQ(status_line(too_large), "HTTP/1.1 413 Payload Too Large") << too_large;
}

TEST(AdminWire, A204HasNoBodyAndNoBodyFields) {
    ListenerUnderTest listener(tcp_address(), std::string(token));
    const auto reply = tcp_exchange(listener.port(), request_for("DELETE", "/status/204", true));
    EXPECT_EQ(status_line(reply), "HTTP/1.1 204 No Content") << reply;
    const auto head = head_of(reply);
    EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
    EXPECT_EQ(head.find("Content-Type"), std::string::npos) << head;
    EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
    EXPECT_EQ(body_of(reply), "");
    // The other statuses keep their length.
    const auto created = tcp_exchange(listener.port(), request_for("POST", "/status/201", true));
    EXPECT_NE(head_of(created).find("Content-Length: 14\r\n"), std::string::npos) << created;
    EXPECT_EQ(body_of(created), R"({"status":201})");
}

TEST(AdminWire, TheUnixSocketAnswersTheSameWithoutAToken) {
    TempDir dir;
    const std::string path = dir.file("admin.sock");
    ListenerUnderTest listener(unix_address(path), std::nullopt);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    for (const auto& [status, line] : handler_statuses) {
        const auto reply = unix_exchange(path, request_for("GET", "/status/" + std::to_string(status), false));
        EXPECT_EQ(status_line(reply), line) << reply;
        if (status == 204) {
            EXPECT_EQ(head_of(reply).find("Content-Length"), std::string::npos) << reply;
            EXPECT_EQ(body_of(reply), "");
        }
    }
    const auto too_large =
        unix_exchange(path, request_for("POST", "/status/201", false, "Content-Length: 2000000\r\n"));
    EXPECT_EQ(status_line(too_large), "HTTP/1.1 413 Payload Too Large") << too_large;
}

// Beast alone would take these; the listener keeps the proxy path's framing rules.
TEST(AdminWire, FramingThatTheProxyWouldRefuseGets400BadFraming) {
    ListenerUnderTest listener(tcp_address(), std::string(token));
    const std::string auth = "Authorization: Bearer " + std::string(token) + "\r\n";
    for (const std::string& head : {
             "POST /status/201 HTTP/1.1\r\nConnection: close\r\n" + auth + "\r\n",
             "POST /status/201 HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n" + auth + "\r\n",
             "POST /status/201 HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\nConnection: close\r\n" + auth + "\r\nab",
             "POST /status/201 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n"
             "Connection: close\r\n" +
                 auth + "\r\nab",
             "POST /status/201 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n" + auth + "\r\n",
         }) {
        const auto reply = tcp_exchange(listener.port(), head);
        EXPECT_EQ(status_line(reply), "HTTP/1.1 400 Bad Request") << head;
        EXPECT_NE(body_of(reply).find("\"bad_framing\""), std::string::npos) << reply;
    }
}

TEST(AdminWire, TheQueryIsFormDecodedAndThePathKeptAsSent) {
    std::optional<AdminRequest> seen;
    net::asio::io_context ioc{1};
    net::AdminListener listener(
        ioc, tcp_address(),
        [&seen](const AdminRequest& r) {
            seen = r;
            return AdminResponse{};
        },
        std::string(token), net::AdminLimits{});
    listener.start();
    std::thread thread([&ioc] { ioc.run(); });
    const auto reply = tcp_exchange(listener.tcp_endpoint()->port(),
                                    request_for("GET", "/v1/logs%2Fx?vault=a+b%21&limit=5&&flag", true));
    net::asio::post(ioc, [&listener] { listener.close(); });
    ioc.stop();
    thread.join();
    EXPECT_EQ(status_line(reply), "HTTP/1.1 200 OK");
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen->path, "/v1/logs%2Fx");
    EXPECT_EQ(seen->query.at("vault"), "a b!");
    EXPECT_EQ(seen->query.at("limit"), "5");
    EXPECT_EQ(seen->query.at("flag"), "");
    EXPECT_EQ(seen->query.size(), 3u);
}

}  // namespace
}  // namespace vaultgate::test
