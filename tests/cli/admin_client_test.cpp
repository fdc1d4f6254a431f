// The CLI's admin client on the wire: the real binary against a scripted
// server on a unix socket, for the answers a real admin API seldom gives
// (interim responses, chunked bodies, oversized bodies, something not HTTP).
#include "harness.hpp"

#include <gtest/gtest.h>

#include <boost/asio/local/stream_protocol.hpp>

#include <mutex>
#include <thread>

namespace vaultgate::test {
namespace {

using unix_socket = asio::local::stream_protocol;

// Accepts connections one at a time, records each request head, and answers
// with the scripted bytes, then closes.
class ScriptedAdmin {
public:
    ScriptedAdmin(const TempDir& dir, std::string answer)
        : path_(dir.file("admin.sock")), answer_(std::move(answer)), acceptor_(io_, unix_socket::endpoint(path_)) {
        thread_ = std::thread([this] { serve(); });
    }
    ~ScriptedAdmin() {
        stop_ = true;
        // Wakes the accept with a connection of our own.
        boost::system::error_code ignored;
        unix_socket::socket wake(io_);
        wake.connect(unix_socket::endpoint(path_), ignored);
        thread_.join();
    }
    std::string url() const { return "unix:" + path_; }
    std::string heads() const {
        std::lock_guard lock(mutex_);
        return heads_;
    }

private:
    void serve() {
        while (!stop_) {
            boost::system::error_code ec;
            unix_socket::socket peer(io_);
            acceptor_.accept(peer, ec);
            if (ec || stop_) return;
            std::string received;
            char buf[4096];
            while (received.find("\r\n\r\n") == std::string::npos) {
                std::size_t n = peer.read_some(asio::buffer(buf), ec);
                if (ec) break;
                received.append(buf, n);
            }
            {
                std::lock_guard lock(mutex_);
                heads_ += received.substr(0, received.find("\r\n\r\n") + 4);
            }
            asio::write(peer, asio::buffer(answer_), ec);
            peer.shutdown(unix_socket::socket::shutdown_both, ec);
        }
    }

    std::string path_;
    std::string answer_;
    asio::io_context io_;
    unix_socket::acceptor acceptor_;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::string heads_;
    std::thread thread_;
};

constexpr const char* wire_token = "wire-token-0123456789abcdef";

// A token file the CLI accepts, holding wire_token.
std::string token_file_in(const TempDir& dir) { return dir.write("token", std::string(wire_token) + "\n"); }

CommandResult vault_list(const ScriptedAdmin& admin, const std::string& token_file = "") {
    std::vector<std::string> argv{VAULTGATE_BINARY, "vault", "list", "--json", "--admin", admin.url()};
    if (!token_file.empty()) argv.insert(argv.end(), {"--token-file", token_file});
    return run_command(argv);
}

TEST(AdminClientWire, ReadsAChunkedAnswerAfterAnInterimOne) {
    TempDir dir;
    ScriptedAdmin admin(dir,
                        "HTTP/1.1 100 Continue\r\n\r\n"
                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5\r\n{\"vau\r\n8;ext=1\r\nlts\":[]}\r\n0\r\n\r\n");
    auto result = vault_list(admin);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, "{\"vaults\":[]}\n");
}

TEST(AdminClientWire, SendsTheTokenInTheHeadAndNeverInAMessage) {
    TempDir dir;
    ScriptedAdmin admin(dir, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]");
    auto ok = vault_list(admin, token_file_in(dir));
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    const std::string heads = admin.heads();
    EXPECT_NE(heads.find("GET /v1/vaults HTTP/1.1\r\n"), std::string::npos) << heads;
    EXPECT_NE(heads.find("\r\nAuthorization: Bearer " + std::string(wire_token) + "\r\n"), std::string::npos) << heads;
    EXPECT_NE(heads.find("\r\nHost: localhost\r\n"), std::string::npos) << heads;
}

TEST(AdminClientWire, RefusesABodyOver64MiB) {
    TempDir dir;
    ScriptedAdmin admin(dir, "HTTP/1.1 200 OK\r\nContent-Length: 67108865\r\n\r\n");
    auto result = vault_list(admin);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("admin API at " + admin.url() + ": the response body is larger than 64 MiB"),
              std::string::npos)
        << result.err;
}

TEST(AdminClientWire, AnAnswerThatIsNotHttpIsARuntimeFailure) {
    TempDir dir;
    ScriptedAdmin admin(dir, "SSH-2.0-OpenSSH_9.2\r\n\r\n");
    auto result = vault_list(admin, token_file_in(dir));
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("admin API at " + admin.url() + ": the answer is not HTTP/1.x"), std::string::npos)
        << result.err;
    EXPECT_EQ(result.err.find(wire_token), std::string::npos);
}

TEST(AdminClientWire, AnUnreachableServerIsNamed) {
    TempDir dir;
    auto result = run_command({VAULTGATE_BINARY, "vault", "list", "--admin", "unix:" + dir.file("nothing.sock")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("cannot connect to the admin API at unix:" + dir.file("nothing.sock")), std::string::npos)
        << result.err;
}

TEST(AdminClientWire, TargetsArePercentEncoded) {
    TempDir dir;
    ScriptedAdmin admin(dir, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    auto result = run_command({VAULTGATE_BINARY, "logs", "--json", "--admin", admin.url(), "--vault", "a+b c/d"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    // '+' is a space in a query: it must go as %2B.
    EXPECT_NE(admin.heads().find("GET /v1/logs?vault=a%2Bb%20c%2Fd HTTP/1.1\r\n"), std::string::npos) << admin.heads();
    result = run_command({VAULTGATE_BINARY, "vault", "show", "--json", "--admin", admin.url(), "x/y?z"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(admin.heads().find("GET /v1/vaults/x%2Fy%3Fz HTTP/1.1\r\n"), std::string::npos) << admin.heads();
}

}  // namespace
}  // namespace vaultgate::test
