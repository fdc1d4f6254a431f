// The outbound HTTPS client against a real TLS server on 127.0.0.1: the
// upstream trust store, host names, upstream.resolve, the address rules,
// body limits and timeouts.
#include "net/upstream/https_client.hpp"
#include "harness.hpp"
#include "net/upstream/dialer.hpp"  // internal to the proxy: no public header
#include "net/upstream/tls_contexts.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace vaultgate::net {
namespace {

using test::RecordingUpstream;
using test::TempDir;
using test::TestPki;

constexpr const char* token_json = R"({"access_token":"minted-0123456789","token_type":"Bearer","expires_in":3600})";

class HttpsClientTest : public ::testing::Test {
protected:
    HttpsClientTest() : pki_(dir_) {
        rt_.config.limits.connect_timeout = std::chrono::seconds(5);
        rt_.config.upstream_ca_file = pki_.upstream_ca_cert;
        rt_.publish_settings(make_live_settings(rt_.config, 0));
        rt_.resolver = &resolver_;
        rt_.local_addresses.refresh();
    }

    // A TLS server with a certificate for `cert_host` (signed by a CA the
    // upstream trust store does not hold, with `rogue`).
    std::unique_ptr<RecordingUpstream> server(const std::string& cert_host, bool rogue = false) {
        auto [cert, key] = pki_.server_files(dir_, cert_host, rogue);
        return std::make_unique<RecordingUpstream>(cert, key);
    }

    void pin(const std::string& host) {
        rt_.config.upstream_resolve[host] = "127.0.0.1";
        rt_.publish_settings(make_live_settings(rt_.config, 0));
    }

    struct Outcome {
        std::optional<HttpsResponse> response;
        std::optional<HttpsError> error;
    };

    Outcome run(const HttpsRequest& request, const HttpsLimits& limits = {}) {
        asio::io_context io;
        Outcome out;
        asio::co_spawn(io, https_request(rt_, request, limits), [&](std::exception_ptr e, HttpsResponse r) {
            if (!e) {
                out.response = std::move(r);
                return;
            }
            try {
                std::rethrow_exception(e);
            } catch (const HttpsError& error) {
                out.error = error;
            }
        });
        io.run();
        return out;
    }

    static HttpsRequest get(const std::string& url) {
        HttpsRequest request;
        request.method = "GET";
        request.url = url;
        return request;
    }

    TempDir dir_;
    TestPki pki_;
    ResolverPool resolver_{1};
    Runtime rt_;
};

TEST_F(HttpsClientTest, PostsAFormAndReadsTheJsonAnswer) {
    auto origin = server("token.test");
    const std::string json = token_json;
    origin->script_response("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(json.size()) + "\r\n\r\n" + json);
    pin("token.test");
    const std::string form = "grant_type=client_credentials&client_id=vg&client_secret=s3cr%2Bt";
    HttpsRequest request;
    request.url = "https://token.test:" + std::to_string(origin->port()) + "/scripted";
    request.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}};
    request.body = form;

    auto out = run(request);
    ASSERT_TRUE(out.response) << out.error->what();
    EXPECT_EQ(out.response->status, 200);
    EXPECT_EQ(out.response->header("content-type"), "application/json");
    EXPECT_EQ(out.response->body.reveal(), json);

    auto received = origin->requests();
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].method, "POST");
    EXPECT_EQ(received[0].target, "/scripted");
    EXPECT_EQ(received[0].body, form);
    EXPECT_EQ(received[0].header_values("content-type"), std::vector<std::string>{"application/x-www-form-urlencoded"});
    EXPECT_EQ(received[0].header_values("content-length"), std::vector<std::string>{std::to_string(form.size())});
    EXPECT_EQ(received[0].header_values("host"),
              std::vector<std::string>{"token.test:" + std::to_string(origin->port())});
}

TEST_F(HttpsClientTest, ACertificateFromAnotherCaIsRefused) {
    auto origin = server("token.test", /*rogue=*/true);
    pin("token.test");
    auto out = run(get("https://token.test:" + std::to_string(origin->port()) + "/echo"));
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, HttpsError::Kind::tls);
    EXPECT_NE(std::string(out.error->what()).find("did not verify against upstream.ca_file"), std::string::npos)
        << out.error->what();
    EXPECT_TRUE(origin->requests().empty());
}

TEST_F(HttpsClientTest, ACertificateForAnotherHostIsRefused) {
    auto origin = server("other.test");
    pin("token.test");
    auto out = run(get("https://token.test:" + std::to_string(origin->port()) + "/echo"));
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, HttpsError::Kind::tls);
    EXPECT_NE(std::string(out.error->what()).find("hostname mismatch"), std::string::npos) << out.error->what();
    EXPECT_TRUE(origin->requests().empty());
}

TEST_F(HttpsClientTest, ABodyOverTheLimitIsAnError) {
    auto origin = server("token.test");
    pin("token.test");
    const std::string url = "https://token.test:" + std::to_string(origin->port()) + "/big?n=";
    HttpsLimits limits;
    limits.max_body = 1000;

    auto within = run(get(url + "1000"), limits);
    ASSERT_TRUE(within.response) << within.error->what();
    EXPECT_EQ(within.response->body.size(), 1000u);

    auto over = run(get(url + "1001"), limits);
    ASSERT_TRUE(over.error);
    EXPECT_EQ(over.error->kind, HttpsError::Kind::too_large);
    EXPECT_NE(std::string(over.error->what()).find("larger than 1000 bytes"), std::string::npos) << over.error->what();
}

// The listener never accepts: the kernel completes the TCP handshake, and the
// TLS ClientHello then waits for an answer that never comes.
TEST_F(HttpsClientTest, AServerThatNeverAnswersTimesOut) {
    asio::io_context io;
    tcp::acceptor silent(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    pin("token.test");
    HttpsLimits limits;
    limits.total_timeout = std::chrono::milliseconds(300);
    const auto started = std::chrono::steady_clock::now();
    auto out = run(get("https://token.test:" + std::to_string(silent.local_endpoint().port()) + "/"), limits);
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, HttpsError::Kind::timeout) << out.error->what();
    EXPECT_GE(took, std::chrono::milliseconds(300));
    EXPECT_LT(took, std::chrono::seconds(5));
}

// token.test exists only through upstream.resolve, and that pin is what lets
// it reach a loopback address; the address itself, unpinned, is refused.
TEST_F(HttpsClientTest, UpstreamResolveDecidesWhereANameGoes) {
    auto origin = server("token.test");
    const std::string port = std::to_string(origin->port());

    auto unpinned_address = run(get("https://127.0.0.1:" + port + "/echo"));
    ASSERT_TRUE(unpinned_address.error);
    EXPECT_EQ(unpinned_address.error->kind, HttpsError::Kind::refused) << unpinned_address.error->what();

    pin("token.test");
    auto pinned = run(get("https://token.test:" + port + "/echo"));
    ASSERT_TRUE(pinned.response) << pinned.error->what();
    EXPECT_EQ(pinned.response->status, 200);
    EXPECT_EQ(pinned.response->body.reveal(), "ok");
    EXPECT_EQ(origin->connections(), 1u);
}

TEST_F(HttpsClientTest, NeverConnectsToTheProxysOwnListeners) {
    test::CanaryListener listener;
    rt_.self_endpoints.emplace_back(asio::ip::make_address("127.0.0.1"), listener.port());
    pin("token.test");
    auto out = run(get("https://token.test:" + std::to_string(listener.port()) + "/"));
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, HttpsError::Kind::refused);
    EXPECT_NE(std::string(out.error->what()).find("self_connection"), std::string::npos) << out.error->what();
    EXPECT_EQ(listener.accepted(), 0u);
}

TEST_F(HttpsClientTest, AnErrorNamesTheEndpointButNotThePathOrQuery) {
    HttpsRequest request = get("http://token.test/oauth?client_secret=hunter2hunter2");
    auto out = run(request);
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, HttpsError::Kind::bad_url);
    EXPECT_EQ(std::string(out.error->what()).find("hunter2"), std::string::npos);

    pin("token.test");
    asio::io_context io;
    tcp::acceptor closed(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = closed.local_endpoint().port();
    closed.close();
    out = run(get("https://token.test:" + std::to_string(port) + "/oauth?client_secret=hunter2hunter2"));
    ASSERT_TRUE(out.error);
    EXPECT_EQ(out.error->kind, HttpsError::Kind::unreachable);
    const std::string message = out.error->what();
    EXPECT_NE(message.find("https://token.test:" + std::to_string(port)), std::string::npos) << message;
    EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
    EXPECT_EQ(message.find("/oauth"), std::string::npos) << message;
}

}  // namespace
}  // namespace vaultgate::net
