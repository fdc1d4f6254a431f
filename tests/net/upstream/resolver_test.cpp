// Name resolution through a real DNS server on loopback: the proxy runs in a
// private mount namespace whose /etc/resolv.conf points at a test resolver
// that answers one name slowly. A slow answer must not hold up another lookup.
#include "blackhole.hpp"
#include "harness.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <map>
#include <thread>

namespace vaultgate::test {
namespace {

// Each test has its resolver on its own address, so that tests running in
// parallel never compete for port 53.
constexpr const char* slow_test_dns_ip = "127.0.0.77";
constexpr const char* fallback_test_dns_ip = "127.0.0.78";
constexpr const char* nxdomain_test_dns_ip = "127.0.0.79";

// Answers A queries: fast.test (127.0.0.1) at once, slow.test (127.0.0.1)
// after `slow_delay`, two.test with 127.0.0.1 then 127.0.0.2,
// silent-then-closed.test with 127.0.0.1 then 127.0.0.3, all-silent.test with
// 127.0.0.1 then 127.0.0.4; AAAA with an
// empty answer; everything else NXDOMAIN.
class TestDnsServer {
public:
    TestDnsServer(const char* ip, std::chrono::milliseconds slow_delay) : slow_delay_(slow_delay) {
        socket_.open(asio::ip::udp::v4());
        socket_.bind(asio::ip::udp::endpoint(asio::ip::make_address(ip), 53));
        socket_.non_blocking(true);
        thread_ = std::thread([this] { loop(); });
    }
    ~TestDnsServer() {
        stop_ = true;
        thread_.join();
        for (auto& t : delayed_) t.join();
        boost::system::error_code ec;
        socket_.close(ec);
    }
    int slow_queries() const { return slow_queries_; }

private:
    void loop() {
        for (;;) {
            std::array<unsigned char, 512> buf{};
            asio::ip::udp::endpoint from;
            boost::system::error_code ec;
            std::size_t n = socket_.receive_from(asio::buffer(buf), from, 0, ec);
            if (stop_) return;
            if (ec == asio::error::would_block) {
                pollfd p{socket_.native_handle(), POLLIN, 0};
                ::poll(&p, 1, 50);
                continue;
            }
            if (ec || n < 17) continue;
            std::string query(reinterpret_cast<char*>(buf.data()), n);
            std::string name;
            std::size_t pos = 12;
            while (pos < n && buf[pos] != 0) {
                std::size_t len = buf[pos];
                if (!name.empty()) name += '.';
                name.append(query, pos + 1, len);
                pos += len + 1;
            }
            if (pos + 5 > n) continue;
            int qtype = buf[pos + 1] << 8 | buf[pos + 2];
            std::string question = query.substr(12, pos + 5 - 12);
            auto reply = answer(query.substr(0, 2), question, name, qtype);
            if (name == "slow.test" && qtype == 1) {
                ++slow_queries_;
                delayed_.emplace_back([this, reply, from] {
                    for (auto waited = std::chrono::milliseconds(0); waited < slow_delay_ && !stop_;
                         waited += std::chrono::milliseconds(50))
                        std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    boost::system::error_code ignored;
                    socket_.send_to(asio::buffer(reply), from, 0, ignored);
                });
            } else {
                socket_.send_to(asio::buffer(reply), from, 0, ec);
            }
        }
    }

    static std::string answer(const std::string& id, const std::string& question, const std::string& name, int qtype) {
        const std::map<std::string, std::vector<unsigned char>> addresses = {{"fast.test", {1}},
                                                                             {"slow.test", {1}},
                                                                             {"two.test", {1, 2}},
                                                                             {"silent-then-closed.test", {1, 3}},
                                                                             {"all-silent.test", {1, 4}}};
        const auto found = addresses.find(name);
        const bool known = found != addresses.end();
        std::vector<unsigned char> last_octets;  // of 127.0.0.x, in answer order
        if (known && qtype == 1) last_octets = found->second;
        std::string r = id;
        r += known ? "\x81\x80" : std::string("\x81\x83", 2);  // response, recursion; NOERROR or NXDOMAIN
        r += std::string("\x00\x01", 2);                       // one question
        r += '\0';
        r += static_cast<char>(last_octets.size());  // answers
        r += std::string(4, '\0');
        r += question;
        for (unsigned char octet : last_octets) {
            r += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04", 12);
            r += std::string("\x7f\x00\x00", 3);
            r += static_cast<char>(octet);
        }
        return r;
    }

    asio::io_context ioc_;
    asio::ip::udp::socket socket_{ioc_};
    std::chrono::milliseconds slow_delay_;
    std::atomic<bool> stop_{false};
    std::atomic<int> slow_queries_{0};
    std::thread thread_;
    std::vector<std::thread> delayed_;
};

// The test resolver must listen on port 53 (resolv.conf has no port) and the
// proxy sees it through a bind mount over /etc/resolv.conf in a private mount
// namespace: both need root. A developer without root skips these tests; CI
// runs as root and sets VAULTGATE_REQUIRE_ROOT_TESTS, which turns the skip into
// a failure, so there they cannot be skipped unnoticed.
class ResolverTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() == 0) return;
        if (std::getenv("VAULTGATE_REQUIRE_ROOT_TESTS"))
            FAIL() << "VAULTGATE_REQUIRE_ROOT_TESTS is set but this test runs without root";
        GTEST_SKIP() << "needs root: a resolver on port 53 and a private mount namespace (unshare -m)";
    }

    // The proxy, in a mount namespace whose /etc/resolv.conf names only the
    // test resolver at dns_ip, allowed to reach the given names and 127/8.
    std::unique_ptr<ServeProcess> start_proxy(const char* dns_ip, const std::string& limits,
                                              const std::vector<std::string>& allowed) {
        std::string allowed_extra;
        for (const auto& a : allowed) allowed_extra += ", \"" + a + "\"";
        auto yaml = serve_config(dir_, pki_, 443, 443, limits, allowed_extra);
        yaml += "    allowed_cidrs: [127.0.0.0/8]\n";
        auto config = dir_.write("vaultgate.yaml", yaml);
        auto resolv =
            dir_.write("resolv.conf", std::string("nameserver ") + dns_ip + "\noptions timeout:10 attempts:1\n");
        return std::make_unique<ServeProcess>(
            config, std::map<std::string, std::string>{}, 0,
            std::vector<std::string>{"unshare", "-m", "sh", "-c",
                                     "mount --bind \"$0\" /etc/resolv.conf && exec \"$1\" serve --config \"$2\"",
                                     resolv});
    }

    TempDir dir_;
    TestPki pki_{dir_};
};

TEST_F(ResolverTest, ASlowAnswerDoesNotHoldUpAnotherLookup) {
    CanaryListener target;
    TestDnsServer dns(slow_test_dns_ip, std::chrono::milliseconds(4000));
    auto port = std::to_string(target.port());
    auto proxy = start_proxy(slow_test_dns_ip, "", {"fast.test:" + port, "slow.test:" + port});
    auto& proc = *proxy;
    ASSERT_TRUE(proc.started()) << proc.stderr_text();

    RawClient slow(proc.proxy_port());
    slow.write("CONNECT slow.test:" + port + " HTTP/1.1\r\nHost: slow.test:" + port + "\r\n\r\n");
    // Wait until the slow lookup is really in progress at the resolver.
    for (int i = 0; i < 100 && dns.slow_queries() == 0; ++i) slow.read_some(20);
    ASSERT_GT(dns.slow_queries(), 0);

    RawClient fast(proc.proxy_port());
    auto head = fast.connect("fast.test:" + port);
    EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    // The fast tunnel is up while the slow name is still unanswered.
    EXPECT_EQ(slow.read_some(0), "");
    {
        auto late = slow.read_some(10000);
        EXPECT_EQ(late.rfind("HTTP/1.1 200", 0), 0u) << late;
    }
    slow.close();
    fast.close();
    proc.signal(SIGTERM);
    EXPECT_EQ(proc.wait_exit(), 0);
}

// A name the DNS server answers with NXDOMAIN: 502 resolve_failed on the
// tunnel and plain paths, and one warning on stderr however often it fails.
TEST_F(ResolverTest, ANameThatDoesNotResolveIsResolveFailedWithOneWarning) {
    TestDnsServer dns(nxdomain_test_dns_ip, std::chrono::milliseconds(0));
    auto proxy = start_proxy(nxdomain_test_dns_ip, "", {"nowhere.test:443", "nowhere.test:80"});
    auto& proc = *proxy;
    ASSERT_TRUE(proc.started()) << proc.stderr_text();
    for (int i = 0; i < 3; ++i) {
        RawClient client(proc.proxy_port());
        auto head = client.connect("nowhere.test:443");
        EXPECT_EQ(head.rfind("HTTP/1.1 502", 0), 0u) << head;
        EXPECT_NE(head.find("X-Vaultgate-Reason: resolve_failed\r\n"), std::string::npos) << head;
        EXPECT_NE(head.find("\"code\":\"resolve_failed\""), std::string::npos) << head;
    }
    proc.signal(SIGTERM);
    EXPECT_EQ(proc.wait_exit(), 0);
    const auto err = proc.stderr_text();
    const std::string warning = "warn upstream nowhere.test:443: resolve_failed (the name does not resolve)";
    const auto first = err.find(warning);
    EXPECT_NE(first, std::string::npos) << err;
    // Three failures within the interval: one line.
    EXPECT_EQ(err.find(warning, first + 1), std::string::npos) << err;
}

// Names with two addresses whose first never answers. The dial gives it its
// share of limits.connect_timeout (half of 4 s) and then tries the second,
// instead of spending the whole timeout on the first and answering 504; what
// the second does decides the answer.
TEST_F(ResolverTest, AnAddressThatDoesNotAnswerIsSkippedForTheNextOne) {
    // One port on four addresses. The kernel picks one free on 127.0.0.1 only,
    // and a parallel test may hold it on another: try ports until all fit.
    std::unique_ptr<Blackhole> silent, refusing, also_silent;
    std::unique_ptr<CanaryListener> target;
    for (int attempt = 0; attempt < 20 && !also_silent; ++attempt) {
        silent = std::make_unique<Blackhole>("127.0.0.1", 0);
        ASSERT_TRUE(silent->ok());
        try {
            target = std::make_unique<CanaryListener>("127.0.0.2", silent->port());  // answers
        } catch (const boost::system::system_error&) {
            continue;
        }
        // 127.0.0.3: bound, not listening, so a connect is refused at once.
        refusing = std::make_unique<Blackhole>("127.0.0.3", silent->port(), false);
        if (!refusing->ok()) continue;
        auto candidate = std::make_unique<Blackhole>("127.0.0.4", silent->port());
        if (candidate->ok()) also_silent = std::move(candidate);
    }
    ASSERT_TRUE(also_silent) << "no port free on 127.0.0.1-4";

    TestDnsServer dns(fallback_test_dns_ip, std::chrono::milliseconds(0));
    auto port = std::to_string(target->port());
    auto proxy = start_proxy(fallback_test_dns_ip, "  connect_timeout: 4s\n",
                             {"two.test:" + port, "silent-then-closed.test:" + port, "all-silent.test:" + port});
    auto& proc = *proxy;
    ASSERT_TRUE(proc.started()) << proc.stderr_text();

    struct Case {
        const char* name;
        const char* status;                  // the CONNECT answer
        std::chrono::milliseconds at_least;  // a lower bound the timers guarantee
    };
    const Case cases[] = {
        // The silent address was tried first and given its share: the
        // fallback, not a lucky order, is what passed.
        {"two.test", "HTTP/1.1 200", std::chrono::milliseconds(1900)},
        {"silent-then-closed.test", "HTTP/1.1 502", std::chrono::milliseconds(1900)},
        // Both silent: the second gets what is left, then it is a timeout.
        {"all-silent.test", "HTTP/1.1 504", std::chrono::milliseconds(3900)},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        RawClient client(proc.proxy_port());
        const auto start = std::chrono::steady_clock::now();
        auto head = client.connect(std::string(c.name) + ":" + port);
        const auto took = std::chrono::steady_clock::now() - start;
        EXPECT_EQ(head.rfind(c.status, 0), 0u) << head;
        EXPECT_GE(took, c.at_least);
        client.close();
    }
    EXPECT_TRUE(eventually([&] { return target->accepted() == 1; }));  // counted by its own thread
    proc.signal(SIGTERM);
    EXPECT_EQ(proc.wait_exit(), 0);
}

}  // namespace
}  // namespace vaultgate::test
