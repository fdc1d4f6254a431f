// Framing (how long a body is), connection management and serialisation of
// parsed HTTP/1.1 heads: the other half of the request-smuggling defence.
#include "vaultgate/http/message.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate {
namespace {

ParseResult parse_req(std::string_view buf, RequestHead& head, const HeadLimits& limits = {}) {
    return parse_request_head(buf, limits, head);
}

ParseResult parse_resp(std::string_view buf, ResponseHead& head, const HeadLimits& limits = {}) {
    return parse_response_head(buf, limits, head);
}

// ---------------------------------------------------------------- framing

struct FramingRow {
    const char* name;
    std::string head;              // raw request or response head
    std::optional<BodyKind> kind;  // nullopt: refused
    std::uint64_t length = 0;
    std::string method = "GET";  // response rows only
};

TEST(HttpFraming, Request) {
    const std::string r11 = "POST / HTTP/1.1\r\nHost: a\r\n";
    const std::vector<FramingRow> rows = {
        {"no body", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", BodyKind::none},
        {"http10 no host", "GET / HTTP/1.0\r\n\r\n", BodyKind::none},
        {"http10 with content-length", "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\n", BodyKind::content_length, 2},
        {"content-length", r11 + "Content-Length: 5\r\n\r\n", BodyKind::content_length, 5},
        {"content-length zero", r11 + "Content-Length: 0\r\n\r\n", BodyKind::content_length, 0},
        {"content-length leading zeros", r11 + "Content-Length: 007\r\n\r\n", BodyKind::content_length, 7},
        {"content-length 19 digits", r11 + "Content-Length: 9999999999999999999\r\n\r\n", BodyKind::content_length,
         9999999999999999999ull},
        {"content-length lower case", r11 + "content-length: 1\r\n\r\n", BodyKind::content_length, 1},
        {"chunked", r11 + "Transfer-Encoding: chunked\r\n\r\n", BodyKind::chunked},
        {"chunked upper case", r11 + "transfer-encoding: CHUNKED\r\n\r\n", BodyKind::chunked},
        {"chunked with htab", r11 + "Transfer-Encoding:\tchunked\r\n\r\n", BodyKind::chunked},
        {"chunked leading space", r11 + "Transfer-Encoding:  chunked\r\n\r\n", BodyKind::chunked},
        {"chunked trailing space", r11 + "Transfer-Encoding: chunked \r\n\r\n", BodyKind::chunked},
        // Transfer-Encoding.
        {"xchunked", r11 + "Transfer-Encoding: xchunked\r\n\r\n", std::nullopt},
        {"chunked list", r11 + "Transfer-Encoding: chunked, chunked\r\n\r\n", std::nullopt},
        {"gzip then chunked", r11 + "Transfer-Encoding: gzip, chunked\r\n\r\n", std::nullopt},
        {"chunked with parameter", r11 + "Transfer-Encoding: chunked;q=1\r\n\r\n", std::nullopt},
        {"chunked trailing comma", r11 + "Transfer-Encoding: chunked,\r\n\r\n", std::nullopt},
        {"identity", r11 + "Transfer-Encoding: identity\r\n\r\n", std::nullopt},
        {"quoted chunked", r11 + "Transfer-Encoding: \"chunked\"\r\n\r\n", std::nullopt},
        {"empty te", r11 + "Transfer-Encoding:\r\n\r\n", std::nullopt},
        {"two te headers", r11 + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", std::nullopt},
        {"te and cl", r11 + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", std::nullopt},
        {"cl and te", r11 + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", std::nullopt},
        {"te on http10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", std::nullopt},
        // Content-Length.
        {"plus sign", r11 + "Content-Length: +5\r\n\r\n", std::nullopt},
        {"minus sign", r11 + "Content-Length: -5\r\n\r\n", std::nullopt},
        {"space inside", r11 + "Content-Length: 5 5\r\n\r\n", std::nullopt},
        {"hex", r11 + "Content-Length: 0x5\r\n\r\n", std::nullopt},
        {"list of same", r11 + "Content-Length: 5, 5\r\n\r\n", std::nullopt},
        {"list without space", r11 + "Content-Length: 5,5\r\n\r\n", std::nullopt},
        {"empty", r11 + "Content-Length:\r\n\r\n", std::nullopt},
        {"decimal point", r11 + "Content-Length: 5.0\r\n\r\n", std::nullopt},
        {"exponent", r11 + "Content-Length: 1e3\r\n\r\n", std::nullopt},
        {"20 digits", r11 + "Content-Length: 00000000000000000001\r\n\r\n", std::nullopt},
        {"past uint64", r11 + "Content-Length: 18446744073709551616\r\n\r\n", std::nullopt},
        {"duplicate same", r11 + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", std::nullopt},
        {"duplicate different", r11 + "Content-Length: 5\r\ncontent-length: 6\r\n\r\n", std::nullopt},
        // Host.
        {"missing host", "GET / HTTP/1.1\r\n\r\n", std::nullopt},
        {"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", std::nullopt},
        {"two hosts same", "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", std::nullopt},
        {"empty host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", std::nullopt},
        {"blank host", "GET / HTTP/1.1\r\nHost:   \r\n\r\n", std::nullopt},
        {"empty host on http10", "GET / HTTP/1.0\r\nHost:\r\n\r\n", std::nullopt},
    };
    for (const FramingRow& row : rows) {
        SCOPED_TRACE(row.name);
        RequestHead head;
        ASSERT_EQ(parse_req(row.head, head).status, ParseStatus::complete);
        const FramingResult f = request_framing(head);
        if (!row.kind) {
            EXPECT_FALSE(f.framing);
            EXPECT_FALSE(f.reason.empty());
            continue;
        }
        ASSERT_TRUE(f.framing) << f.reason;
        EXPECT_EQ(f.framing->kind, *row.kind);
        EXPECT_EQ(f.framing->length, row.length);
    }
}

TEST(HttpFraming, RequestReasonsSayWhatIsWrong) {
    RequestHead head;
    ASSERT_EQ(
        parse_req("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", head).status,
        ParseStatus::complete);
    EXPECT_EQ(request_framing(head).reason, "content-length with transfer-encoding");
}

TEST(HttpFraming, Response) {
    const std::vector<FramingRow> rows = {
        {"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", BodyKind::content_length, 10},
        {"error with body", "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\n", BodyKind::content_length, 3},
        {"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", BodyKind::chunked},
        {"neither", "HTTP/1.1 200 OK\r\n\r\n", BodyKind::until_close},
        {"http10 neither", "HTTP/1.0 200 OK\r\n\r\n", BodyKind::until_close},
        {"head", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", BodyKind::none, 0, "HEAD"},
        {"head chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", BodyKind::none, 0, "HEAD"},
        {"100", "HTTP/1.1 100 Continue\r\n\r\n", BodyKind::none},
        {"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", BodyKind::none},
        {"103", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", BodyKind::none},
        {"204 ignores cl", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", BodyKind::none},
        {"304 ignores cl", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", BodyKind::none},
        {"connect 200", "HTTP/1.1 200 OK\r\n\r\n", BodyKind::none, 0, "CONNECT"},
        {"connect 407", "HTTP/1.1 407 Auth\r\nContent-Length: 2\r\n\r\n", BodyKind::content_length, 2, "CONNECT"},
        {"repeated same cl", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n",
         BodyKind::content_length, 4},
        {"list of same cl", "HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\n", BodyKind::content_length, 4},
        {"different cl", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n", std::nullopt},
        {"list of different cl", "HTTP/1.1 200 OK\r\nContent-Length: 4, 5\r\n\r\n", std::nullopt},
        {"malformed cl", "HTTP/1.1 200 OK\r\nContent-Length: +4\r\n\r\n", std::nullopt},
        {"empty cl", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", std::nullopt},
        {"cl with te", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n", std::nullopt},
        {"te gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", std::nullopt},
        {"te gzip chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", std::nullopt},
        {"te on http10", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", std::nullopt},
    };
    for (const FramingRow& row : rows) {
        SCOPED_TRACE(row.name);
        ResponseHead head;
        ASSERT_EQ(parse_resp(row.head, head).status, ParseStatus::complete);
        const FramingResult f = response_framing(head, row.method);
        if (!row.kind) {
            EXPECT_FALSE(f.framing);
            EXPECT_FALSE(f.reason.empty());
            continue;
        }
        ASSERT_TRUE(f.framing) << f.reason;
        EXPECT_EQ(f.framing->kind, *row.kind);
        EXPECT_EQ(f.framing->length, row.length);
    }
}

// ---------------------------------------------------------------- connection management

TEST(HttpConnection, HopByHopFields) {
    for (std::string_view name : {"Connection", "keep-alive", "Proxy-Connection", "PROXY-AUTHENTICATE",
                                  "Proxy-Authorization", "TE", "Trailer", "transfer-encoding", "Upgrade"})
        EXPECT_TRUE(is_hop_by_hop(name)) << name;
    for (std::string_view name : {"Host", "Content-Length", "Authorization", "Trailers", "X-Upgrade", "", "T"})
        EXPECT_FALSE(is_hop_by_hop(name)) << name;
}

TEST(HttpConnection, ConnectionTokens) {
    const std::vector<Header> headers = {
        {"Connection", "Keep-Alive, X-Foo"}, {"Host", "a"}, {"connection", " ,close,, x-bar "}};
    EXPECT_EQ(connection_tokens(headers), (std::vector<std::string>{"keep-alive", "x-foo", "close", "x-bar"}));
    EXPECT_TRUE(connection_tokens({{"Host", "a"}}).empty());
}

TEST(HttpConnection, WantsClose) {
    struct Row {
        std::vector<Header> headers;
        int minor;
        bool close;
    };
    const std::vector<Row> rows = {
        {{}, 1, false},
        {{}, 0, true},
        {{{"Connection", "close"}}, 1, true},
        {{{"Connection", "Close"}}, 1, true},
        {{{"connection", "upgrade, close"}}, 1, true},
        {{{"Connection", "keep-alive"}, {"Connection", "close"}}, 1, true},
        {{{"Connection", "keep-alive"}}, 0, false},
        {{{"Connection", "Keep-Alive"}}, 0, false},
        {{{"Connection", "keep-alive, close"}}, 0, true},
        {{{"Connection", "closed"}}, 1, false},
        {{{"X-Connection", "close"}}, 1, false},
    };
    for (std::size_t i = 0; i < rows.size(); ++i)
        EXPECT_EQ(wants_close(rows[i].headers, rows[i].minor), rows[i].close) << "row " << i;
}

// ---------------------------------------------------------------- serialisation

TEST(HttpSerialize, RequestHead) {
    RequestHead head;
    head.method = "POST";
    head.target = "/v1/x?y=1";
    head.version_minor = 1;
    head.headers = {{"Host", "a.example"}, {"x-api-key", "k"}, {"X-Empty", ""}};
    EXPECT_EQ(serialize_request_head(head),
              "POST /v1/x?y=1 HTTP/1.1\r\nHost: a.example\r\nx-api-key: k\r\nX-Empty: \r\n\r\n");
    head.version_minor = 0;
    head.headers.clear();
    EXPECT_EQ(serialize_request_head(head), "POST /v1/x?y=1 HTTP/1.0\r\n\r\n");
}

TEST(HttpSerialize, ResponseHead) {
    ResponseHead head;
    head.status = 404;
    head.reason = "Not Found";
    head.headers = {{"Content-Length", "0"}};
    EXPECT_EQ(serialize_response_head(head), "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    head.reason.clear();
    head.headers.clear();
    head.version_minor = 0;
    EXPECT_EQ(serialize_response_head(head), "HTTP/1.0 404 \r\n\r\n");
}

}  // namespace
}  // namespace vaultgate
