// HTTP/2 to the origin: an origin that picks h2 by ALPN (h2_origin.py) gets
// every request, from HTTP/1.1 and HTTP/2 clients alike, as a stream of one
// connection per session; injection, trailers both ways, gRPC, no server
// push, and the response head's size limit.
#include "h2_fixture.hpp"

#include <set>

namespace vaultgate::test {
namespace {

constexpr int refused_stream = 7;

// The values of field `name` in a request the origin logged.
std::vector<std::string> field_values(const nlohmann::json& request, const std::string& key, const std::string& name) {
    std::vector<std::string> out;
    for (const auto& field : request[key])
        if (field[0] == name) out.push_back(field[1]);
    return out;
}

class H2OriginTest : public H2Test {
protected:
    H2OriginTest() { start_h2_origin(); }
};

TEST_F(H2OriginTest, Http11ClientIsServedByAnH2OriginWithTheSecretInjected) {
    const auto out =
        curl({"--http1.1", "-w", " %{http_version} %{http_code}", "https://" + h2_authority() + "/echo?q=1", "-H",
              "x-api-key: placeholder", "-H", "Connection: keep-alive, x-hop", "-H", "x-hop: 1"});
    EXPECT_NE(out.find(" 1.1 200"), std::string::npos) << out;
    EXPECT_NE(out.find("\"x-api-key\""), std::string::npos) << out;  // the origin names the field it got
    EXPECT_EQ(out.find(test_secret), std::string::npos);
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0]["method"], "GET");
    EXPECT_EQ(seen[0]["path"], "/echo?q=1");
    EXPECT_EQ(seen[0]["authority"], h2_authority());
    EXPECT_EQ(field_values(seen[0], "headers", "x-api-key"), std::vector<std::string>{test_secret});
    // Connection-specific fields, and those Connection names, never cross.
    for (const char* hop : {"connection", "x-hop", "host", "transfer-encoding"})
        EXPECT_TRUE(field_values(seen[0], "headers", hop).empty()) << hop;
    EXPECT_TRUE(proxy_->wait_for_log("\"proto\":\"h1\""));
    EXPECT_TRUE(proxy_->wait_for_log("\"path\":\"/echo\",\"status\":200"));
}

TEST_F(H2OriginTest, H2ClientIsServedByAnH2OriginWithTheSecretInjected) {
    const auto out = curl({"--http2", "-w", " %{http_version} %{http_code}", "https://" + h2_authority() + "/echo",
                           "-H", "x-api-key: placeholder"});
    EXPECT_NE(out.find(" 2 200"), std::string::npos) << out;
    EXPECT_EQ(out.find(test_secret), std::string::npos);
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(field_values(seen[0], "headers", "x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(proxy_->wait_for_log("\"proto\":\"h2\""));
}

TEST_F(H2OriginTest, BodiesOfEitherFramingReachTheOriginWhole) {
    const std::string body(300000, 'u');
    const auto file = dir_.write("body.bin", body);
    curl({"--http2", "--data-binary", "@" + file, "https://" + h2_authority() + "/upload"});
    curl({"--http1.1", "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file,
          "https://" + h2_authority() + "/chunked"});
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 2u);
    for (const auto& s : seen) EXPECT_EQ(s["body"], body) << s["path"];
    EXPECT_TRUE(proxy_->wait_for_log("\"bytes_up\":300000"));
}

// The origin holds each answer until ten requests are in flight on one
// connection: they are, all on the first.
TEST_F(H2OriginTest, ConcurrentStreamsShareOneOriginConnection) {
    const auto r = h2_client(h2_authority(), {"concurrent", "10", "/hold?n=10"});
    ASSERT_EQ(r["responses"].size(), 10u) << r.dump();
    for (const auto& one : r["responses"]) EXPECT_EQ(one["status"], 200) << r.dump();
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 10u);
    for (const auto& s : seen) EXPECT_EQ(s["connection"], 1);
}

// Client connections of one session, HTTP/1.1 and HTTP/2, one after another:
// one origin connection (on the one I/O thread) serves them all.
TEST_F(H2OriginTest, ClientConnectionsOfASessionShareTheOriginConnection) {
    proxy_threads_ = 1;
    start_proxy();
    for (int i = 0; i < 3; ++i) curl({"--http1.1", "https://" + h2_authority() + "/h1"});
    curl({"--http2", "https://" + h2_authority() + "/h2"});
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 4u);
    for (const auto& s : seen) EXPECT_EQ(s["connection"], 1) << s["path"];
}

TEST_F(H2OriginTest, TrailersPassBothWaysBetweenH2ClientAndH2Origin) {
    const auto r = h2_client(h2_authority(),
                             {"request", "/trailers", ":method=POST", "te=trailers", "--trailer",
                              "x-client-trailer=yes", "--trailer", "authorization=not-forwarded"},
                             "abc", true);
    EXPECT_EQ(r["status"], 200) << r.dump();
    EXPECT_EQ(r["trailers"]["x-origin-trailer"], "done") << r.dump();
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0]["body"], "abc");
    EXPECT_EQ(field_values(seen[0], "trailers", "x-client-trailer"), std::vector<std::string>{"yes"});
    EXPECT_TRUE(field_values(seen[0], "trailers", "authorization").empty());  // no auth field in trailers
    EXPECT_EQ(field_values(seen[0], "headers", "te"), std::vector<std::string>{"trailers"});
}

// An HTTP/1.1 client gets the origin's trailers as the trailer section of
// the re-chunked body; its own trailers are dropped.
TEST_F(H2OriginTest, Http11ClientGetsTheOriginsTrailersInTheLastChunk) {
    const auto r = h2_client(h2_authority(), {"h1", "/trailers"});
    const std::string raw = r["raw"];
    EXPECT_NE(raw.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << raw;
    EXPECT_NE(raw.find("\r\n0\r\nx-origin-trailer: done\r\n"), std::string::npos) << raw;
    EXPECT_EQ(raw.find(test_secret), std::string::npos);
}

TEST_F(H2OriginTest, GrpcWorksEndToEnd) {
    const auto r = h2_client(h2_authority(), {"request", "/pkg.Echo/Say", ":method=POST",
                                              "content-type=application/grpc", "te=trailers", "--grpc-body", "hello"});
    EXPECT_EQ(r["status"], 200) << r.dump();
    EXPECT_EQ(r["headers"]["content-type"], "application/grpc");
    const std::string body = r["body"];
    EXPECT_EQ(body.size(), 10u);
    EXPECT_EQ(body.substr(5), "hello");
    EXPECT_EQ(r["trailers"]["grpc-status"], "0") << r.dump();
    EXPECT_EQ(r["trailers"]["grpc-message"], "echoed");
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(field_values(seen[0], "headers", "te"), std::vector<std::string>{"trailers"});
    EXPECT_EQ(field_values(seen[0], "headers", "x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(proxy_->wait_for_log("\"path\":\"/pkg.Echo/Say\",\"status\":200"));
}

// A bidirectional gRPC stream: the origin's echo of the first message comes
// back while the request is still open, so the body goes up while the
// response comes down.
TEST_F(H2OriginTest, BidirectionalGrpcStreamsFlowBothWaysAtOnce) {
    const auto r = h2_client(h2_authority(), {"bidi", "/pkg.Echo/Bidi"});
    EXPECT_EQ(r["status"], 200) << r.dump();
    EXPECT_EQ(r["echoes"], nlohmann::json::array({"one", "two"})) << r.dump();
    EXPECT_EQ(r["trailers"]["grpc-status"], "0") << r.dump();
    EXPECT_TRUE(proxy_->wait_for_log("\"path\":\"/pkg.Echo/Bidi\",\"status\":200"));
    EXPECT_TRUE(proxy_->wait_for_log("\"bytes_up\":16"));
}

// Push is off: a PUSH_PROMISE ends the origin connection (its stream gets a
// 502, the client sees no push), and the next request opens another.
TEST_F(H2OriginTest, ServerPushNeverReachesTheClient) {
    const auto r = h2_client(h2_authority(), {"--then", "/after", "request", "/push"});
    EXPECT_EQ(r["status"], 502) << r.dump();
    EXPECT_EQ(r["then"]["status"], 200) << r.dump();
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1]["connection"], 2);
    EXPECT_EQ(proxy_->access_log_text().find("/pushed"), std::string::npos);
}

TEST_F(H2OriginTest, AResponseHeadPastTheLimitIsRefused) {
    const auto r = h2_client(h2_authority(), {"request", "/big-head"});
    EXPECT_EQ(r["status"], 502) << r.dump();
    EXPECT_FALSE(r["headers"].contains("x-big-1")) << r.dump();
}

TEST_F(H2OriginTest, MaxConcurrentStreamsIsAdvertisedAndEnforced) {
    start_proxy("  h2_max_concurrent_streams: 7\n");
    const auto settings = h2_client(h2_authority(), {"settings"});
    EXPECT_EQ(settings["type"], 4);
    EXPECT_EQ(settings["settings"]["3"], 7) << settings.dump();  // SETTINGS_MAX_CONCURRENT_STREAMS
    // Nine at once: seven are held by the origin until all seven are in
    // flight, two are refused.
    const auto r = h2_client(h2_authority(), {"concurrent", "9", "/hold?n=7"});
    int served = 0, refused = 0;
    for (const auto& one : r["responses"]) {
        if (one["status"] == 200) ++served;
        if (one["reset"] == refused_stream) ++refused;
    }
    EXPECT_EQ(served, 7) << r.dump();
    EXPECT_EQ(refused, 2) << r.dump();
    EXPECT_EQ(h2_origin_->requests().size(), 7u);
}

TEST_F(H2OriginTest, RedactionScrubsTheHeadBodyAndTrailersFromAnH2Origin) {
    const auto r = h2_client(h2_redact_authority(), {"request", "/reflect"});
    EXPECT_EQ(r["status"], 200) << r.dump();
    EXPECT_EQ(r.dump().find(test_secret), std::string::npos) << r.dump();
    const std::string placeholder = "vaultgate-placeholder-BENCH_KEY";
    EXPECT_EQ(r["body"], "body:" + placeholder) << r.dump();
    EXPECT_EQ(r["headers"]["x-reflected"], placeholder);
    EXPECT_EQ(r["trailers"]["x-reflected-trailer"], placeholder);
    const auto raw = h2_client(h2_redact_authority(), {"h1", "/reflect"});
    const std::string text = raw["raw"];
    EXPECT_EQ(text.find(test_secret), std::string::npos) << text;
    EXPECT_NE(text.find("body:" + placeholder), std::string::npos) << text;
    EXPECT_NE(text.find("x-reflected-trailer: " + placeholder), std::string::npos) << text;
    EXPECT_EQ(field_values(h2_origin_->requests()[0], "headers", "x-api-key"), std::vector<std::string>{test_secret});
}

TEST_F(H2OriginTest, AStreamTheOriginResetsBeforeItsHeadIs502) {
    const auto r = h2_client(h2_authority(), {"--then", "/after", "request", "/reset"});
    EXPECT_EQ(r["status"], 502) << r.dump();
    EXPECT_EQ(r["then"]["status"], 200) << r.dump();  // the origin connection goes on
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1]["connection"], 1);
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"bad_upstream_response\""));
}

// A body the origin cuts after the head: the h2 client's stream is reset
// (its head may or may not have gone out first), the HTTP/1.1 client's
// connection closes before the last chunk.
TEST_F(H2OriginTest, AResponseTheOriginCutsIsCutForTheClient) {
    const auto r = h2_client(h2_authority(), {"request", "/truncate"});
    EXPECT_EQ(r["reset"], 2) << r.dump();  // INTERNAL_ERROR, never END_STREAM
    const auto raw = h2_client(h2_authority(), {"h1", "/truncate"});
    const std::string text = raw["raw"];
    EXPECT_NE(text.find("partial"), std::string::npos) << text;
    EXPECT_EQ(text.find("\r\n0\r\n"), std::string::npos) << text;
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"response_truncated\""));
}

// A WebSocket upgrade needs HTTP/1.1 to the origin: it is never sent as a
// plain h2 request, and an origin that speaks h2 only fails it.
TEST_F(H2OriginTest, AWebSocketUpgradeIsNeverSentOverH2) {
    curl({"--http2", "https://" + h2_authority() + "/first"});  // the h2 connection is open
    const auto out = curl({"--http1.1", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Upgrade: websocket", "-H",
                           "Connection: Upgrade", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "-H",
                           "Sec-WebSocket-Version: 13", "https://" + h2_authority() + "/socket"});
    EXPECT_EQ(out, "502");
    const auto seen = h2_origin_->requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0]["path"], "/first");
}

TEST_F(H2OriginTest, AnOriginThatDoesNotAnswerInTimeIs504) {
    start_proxy("  response_timeout: 1s\n");
    const auto r = h2_client(h2_authority(), {"request", "/hold?n=99"});
    EXPECT_EQ(r["status"], 504) << r.dump();
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"upstream_timeout\""));
}

}  // namespace
}  // namespace vaultgate::test
