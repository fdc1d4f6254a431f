// What a partial ClientHello costs the transparent listener: it waits for the
// rest without spinning, goes on once it is whole, and refuses one past the
// size bound.
#include "harness.hpp"
#include "test_text.hpp"

#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <memory>

namespace vaultgate::test {
namespace {

// A plain TCP client of the transparent listener; every write goes out as its
// own segment (Nagle off), as a client trickling a hello would send it.
class TcpClient {
public:
    explicit TcpClient(std::uint16_t port) {
        socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
        socket_.set_option(tcp::no_delay(true));
    }
    void send(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
    // Whatever arrives within timeout_ms, until the peer closes or resets.
    std::string read_until_closed(int timeout_ms) {
        std::string got;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{socket_.native_handle(), POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            char buf[4096];
            const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, 0);
            if (n <= 0) break;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return got;
    }

private:
    asio::io_context ioc_;
    tcp::socket socket_{ioc_};
};

// The fatal TLS access_denied alert the transparent listener refuses with.
const std::string access_denied_alert("\x15\x03\x03\x00\x02\x02\x31", 7);

class TransparentHelloTest : public ::testing::Test {
protected:
    TransparentHelloTest()
        : pki_(dir_),
          other_files_(pki_.server_files(dir_, "other.test")),
          other_(other_files_.first, other_files_.second) {}

    void SetUp() override {
        transparent_port_ = free_port();
        auto yaml = base_config(dir_, pki_, other_.port(), other_.port());
        yaml =
            replace_all(yaml, "  admin: 127.0.0.1:0\n",
                        "  admin: 127.0.0.1:0\n  transparent: 127.0.0.1:" + std::to_string(transparent_port_) + "\n");
        // Long enough that nothing in a test reaches it: a connection that
        // goes on does so because its hello was complete, not because time ran out.
        yaml = replace_all(yaml, "  handshake_timeout: 3s\n", "  handshake_timeout: 30s\n");
        proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    }

    std::uint64_t peeks() { return proxy_->server().metrics().client_hello_peeks(); }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> other_files_;
    RecordingUpstream other_;
    std::uint16_t transparent_port_ = 0;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

// Clients that send part of a ClientHello, trickle a little more and stall
// must not keep the proxy busy. Counted, not timed: each connection's peeks at
// its unread bytes (vaultgate_client_hello_peeks_total). Waiting until the
// socket holds the whole hello takes a few per connection; one per fragment,
// or one every few milliseconds while stalled, takes dozens.
TEST_F(TransparentHelloTest, AStalledPartialHelloIsWaitedOnNotPolled) {
    const std::string hello = client_hello("other.test");
    ASSERT_GT(hello.size(), 200u);
    constexpr std::size_t clients = 10;
    constexpr std::size_t trickled = 40;
    const std::size_t first_part = hello.size() / 2;
    std::vector<std::unique_ptr<TcpClient>> stalled;
    for (std::size_t i = 0; i < clients; ++i) {
        stalled.push_back(std::make_unique<TcpClient>(transparent_port_));
        stalled.back()->send(hello.substr(0, first_part));
    }
    for (std::size_t b = 0; b < trickled; ++b) {
        for (auto& c : stalled) c->send(hello.substr(first_part + b, 1));
        // Paces the trickle so that the bytes arrive one by one; nothing is asserted on time.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // The stall itself: a proxy that polled would peek all through it.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_LE(peeks(), clients * 5) << "peeks at stalled partial ClientHellos";

    // The rest of the hello: each connection goes on to its decision (the
    // listener was reached directly, so it is refused as one to itself).
    for (auto& c : stalled) c->send(hello.substr(first_part + trickled));
    for (auto& c : stalled) EXPECT_EQ(c->read_until_closed(10000), access_denied_alert);
    EXPECT_TRUE(eventually([&] {
        const auto log = proxy_->access_log_text();
        std::size_t lines = 0;
        for (std::size_t pos = 0; (pos = log.find("\"reason\":\"self_connection\"", pos)) != std::string::npos; ++pos)
            ++lines;
        return lines == clients;
    }));
    EXPECT_EQ(proxy_->access_log_text().find("no_server_name"), std::string::npos);
    EXPECT_LE(peeks(), clients * 6);
}

// A record header announcing more than one TLS record may hold (16 KiB) is
// refused at once: nothing waits for, or holds, more than that.
TEST_F(TransparentHelloTest, AHelloPastTheSizeBoundIsRefused) {
    TcpClient c(transparent_port_);
    std::string oversized("\x16\x03\x01\x40\x01\x01\x00\x3f\xfd", 9);  // record of 16385 bytes
    oversized.append(1000, 'x');
    c.send(oversized);
    // Well before handshake_timeout (30 s), which is what a wait for more would end with.
    EXPECT_EQ(c.read_until_closed(10000), access_denied_alert);
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"denied\""));
}

}  // namespace
}  // namespace vaultgate::test
