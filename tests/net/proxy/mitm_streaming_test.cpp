// The MITM path end to end: bodies both ways, streaming, rechunking,
// WebSocket, informational responses.
#include "mitm_fixture.hpp"

#include <chrono>

namespace vaultgate::test {
namespace {

TEST_F(MitmTest, OneMebibytePostArrivesWhole) {
    auto c = open_bound();
    std::string body(1 << 20, 'b');
    c->write("POST /upload HTTP/1.1\r\nHost: " + bound_authority() +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    auto r = c->read_response(30000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, std::to_string(body.size()));
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].body, body);
}

TEST_F(MitmTest, ChunkedPostIsDecodedAndReframed) {
    auto c = open_bound();
    c->write(
        "POST /upload HTTP/1.1\r\nHost: " + bound_authority() +
        "\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: dropped\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "11");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].body, "hello world");
    EXPECT_EQ(bound_.raw().find("X-Trailer"), std::string::npos);
    EXPECT_EQ(bound_.raw().find("ext=1"), std::string::npos);
}

TEST_F(MitmTest, LargeDownloadStreams) {
    auto c = open_bound();
    c->write(get("/big?n=3000000"));
    auto r = c->read_response(30000);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body.size(), 3000000u);
}

TEST_F(MitmTest, AClientResetInTheMiddleOfADownloadEndsOnlyThatExchange) {
    auto c = open_bound();
    c->write(get("/big?n=50000000"));
    ASSERT_FALSE(c->read_some().empty());  // the download is under way
    c->reset();
    // Writing to the reset client fails; the proxy closes the upstream
    // connection with the rest of the body on it instead of pooling it.
    EXPECT_TRUE(eventually([&] { return bound_.connections_ended() == 1; }, 10000));
    // The next client of the session is served, on a new upstream connection.
    auto next = open_bound();
    EXPECT_EQ(status_of_get(*next, "/echo"), 200);
    EXPECT_EQ(bound_.connections(), 2u);
}

TEST_F(MitmTest, ServerSentEventsArriveBeforeTheStreamEnds) {
    auto c = open_bound();
    c->write(get("/sse"));
    std::string seen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (seen.find("data: first") == std::string::npos && std::chrono::steady_clock::now() < deadline)
        seen += c->read_some(1000);
    EXPECT_NE(seen.find("data: first"), std::string::npos);
    EXPECT_EQ(seen.find("data: second"), std::string::npos);
    bound_.release_sse();
    while (seen.find("0\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline)
        seen += c->read_some(1000);
    EXPECT_NE(seen.find("data: second"), std::string::npos);
}

TEST_F(MitmTest, RedirectsArePassedBackNotFollowed) {
    auto c = open_bound();
    c->write(get("/redirect"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 302);
    EXPECT_NE(r->head.find("Location: https://elsewhere.test/landing"), std::string::npos);
    EXPECT_EQ(bound_.requests().size(), 1u);
}

TEST_F(MitmTest, UnframedResponseIsRechunkedAndKeepsTheClientConnection) {
    auto c = open_bound();
    c->write(get("/close"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "until-close body");
    c->write(get("/echo"));
    auto again = c->read_response();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->body, "ok");
    EXPECT_EQ(bound_.connections(), 2u);
}

TEST_F(MitmTest, UnframedResponseCutByAResetIsNotPassedOnAsComplete) {
    auto c = open_bound();
    c->write(get("/reset"));
    // Rechunked for the client; a reset must not end it with the last chunk.
    EXPECT_FALSE(c->read_response(5000));
    EXPECT_TRUE(c->closed_by_peer(5000));
}

TEST_F(MitmTest, WebSocketIsSplicedAfter101) {
    auto c = open_bound();
    c->write(get("/ws",
                 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 "Sec-WebSocket-Version: 13\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 101);
    c->write("frame-bytes-1");
    std::string echoed;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (echoed.size() < 13 && std::chrono::steady_clock::now() < deadline) echoed += c->read_some(1000);
    EXPECT_EQ(echoed, "frame-bytes-1");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("upgrade"), std::vector<std::string>{"websocket"});
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
}

TEST_F(MitmTest, Http10ClientGetsAClosedResponse) {
    auto c = open_bound();
    c->write("GET /echo HTTP/1.0\r\nHost: " + bound_authority() + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(c->closed_by_peer());
}

// A 103 reaches an HTTP/1.1 client before the final response; an HTTP/1.0
// client, which expects no 1xx, gets only the final one.
TEST_F(MitmTest, InformationalResponsesReachOnlyHttp11Clients) {
    bound_.script_response(
        "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    auto c = open_bound();
    c->write(get("/scripted"));
    auto hint = c->read_response();
    ASSERT_TRUE(hint);
    EXPECT_EQ(hint->status, 103);
    EXPECT_NE(hint->head.find("Link: </style.css>; rel=preload"), std::string::npos) << hint->head;
    auto final_response = c->read_response();
    ASSERT_TRUE(final_response);
    EXPECT_EQ(final_response->status, 200);

    auto old = open_bound();
    old->write("GET /scripted HTTP/1.0\r\nHost: " + bound_authority() + "\r\n\r\n");
    auto r = old->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->head;
    EXPECT_EQ(r->body, "ok");
    EXPECT_TRUE(old->closed_by_peer());
}

// An origin that keeps sending 1xx responses is cut off after 32 of them.
TEST_F(MitmTest, EndlessInformationalResponsesEndIn502) {
    std::string script;
    for (int i = 0; i < 40; ++i) script += "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n";
    bound_.script_response(script + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    auto c = open_bound();
    c->write(get("/scripted"));
    int hints = 0;
    std::optional<RawClient::Response> r;
    for (int i = 0; i < 64; ++i) {
        r = c->read_response();
        if (!r || r->status != 103) break;
        ++hints;
    }
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502) << r->head;
    EXPECT_NE(r->body.find("informational"), std::string::npos) << r->body;
    EXPECT_EQ(hints, 32);
    EXPECT_TRUE(c->closed_by_peer());
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"too_many_informational_responses\""));
}

}  // namespace
}  // namespace vaultgate::test
