// Strict HTTP/1.1 head parsing and framing: the request-smuggling defence.
#include "vaultgate/http/message.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace std::string_literals;

namespace vaultgate {
namespace {

ParseResult parse_req(std::string_view buf, RequestHead& head, const HeadLimits& limits = {}) {
    return parse_request_head(buf, limits, head);
}

ParseResult parse_resp(std::string_view buf, ResponseHead& head, const HeadLimits& limits = {}) {
    return parse_response_head(buf, limits, head);
}

std::size_t head_length(std::string_view s) { return s.find("\r\n\r\n") + 4; }

// ---------------------------------------------------------------- requests

struct ValidRequest {
    const char* name;
    std::string input;
    std::string method;
    std::string target;
    int minor;
    std::vector<Header> headers;
    std::size_t consumed;  // 0: the whole input up to the first blank line
};

const std::vector<ValidRequest>& valid_requests() {
    static const std::vector<ValidRequest> rows = {
        {"simple", "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n", "GET", "/", 1, {{"Host", "a.example"}}, 0},
        {"http10 without host", "GET /x HTTP/1.0\r\n\r\n", "GET", "/x", 0, {}, 0},
        {"absolute form",
         "GET http://a.example/p?q=1 HTTP/1.1\r\nHost: a.example\r\n\r\n",
         "GET",
         "http://a.example/p?q=1",
         1,
         {{"Host", "a.example"}},
         0},
        {"authority form",
         "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
         "CONNECT",
         "a.example:443",
         1,
         {{"Host", "a.example:443"}},
         0},
        {"asterisk form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "OPTIONS", "*", 1, {{"Host", "a"}}, 0},
        {"extension method", "M-SEARCH /x HTTP/1.1\r\nHost: a\r\n\r\n", "M-SEARCH", "/x", 1, {{"Host", "a"}}, 0},
        {"ows trimmed",
         "GET / HTTP/1.1\r\nHost: a\r\nX-A:  \t v w \t \r\n\r\n",
         "GET",
         "/",
         1,
         {{"Host", "a"}, {"X-A", "v w"}},
         0},
        {"no ows", "GET / HTTP/1.1\r\nHost:a\r\n\r\n", "GET", "/", 1, {{"Host", "a"}}, 0},
        {"empty value",
         "GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-Blank:   \r\n\r\n",
         "GET",
         "/",
         1,
         {{"Host", "a"}, {"X-Empty", ""}, {"X-Blank", ""}},
         0},
        {"obs-text in value",
         "GET / HTTP/1.1\r\nHost: a\r\nX-U: caf\xc3\xa9 \xff\r\n\r\n",
         "GET",
         "/",
         1,
         {{"Host", "a"}, {"X-U", "caf\xc3\xa9 \xff"}},
         0},
        {"tab inside value",
         "GET / HTTP/1.1\r\nHost: a\r\nX-T: a\tb\r\n\r\n",
         "GET",
         "/",
         1,
         {{"Host", "a"}, {"X-T", "a\tb"}},
         0},
        {"colon in value", "GET / HTTP/1.1\r\nHost: a:8443\r\n\r\n", "GET", "/", 1, {{"Host", "a:8443"}}, 0},
        {"token specials in name",
         "GET / HTTP/1.1\r\nHost: a\r\nX!#$%&'*+-.^_`|~9: v\r\n\r\n",
         "GET",
         "/",
         1,
         {{"Host", "a"}, {"X!#$%&'*+-.^_`|~9", "v"}},
         0},
        {"name case kept", "GET / HTTP/1.1\r\nhOsT: a\r\n\r\n", "GET", "/", 1, {{"hOsT", "a"}}, 0},
        {"te with htab",
         "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n",
         "POST",
         "/",
         1,
         {{"Host", "a"}, {"Transfer-Encoding", "chunked"}},
         0},
        {"te trailing space",
         "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked \r\n\r\n",
         "POST",
         "/",
         1,
         {{"Host", "a"}, {"Transfer-Encoding", "chunked"}},
         0},
        {"pipelined request untouched",
         "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
         "GET",
         "/1",
         1,
         {{"Host", "a"}},
         0},
        {"body bytes untouched",
         "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n",
         "POST",
         "/",
         1,
         {{"Host", "a"}, {"Content-Length", "5"}},
         0},
        {"garbage after head untouched",
         "GET / HTTP/1.1\r\nHost: a\r\n\r\n\n\r\0\x01 junk"s,
         "GET",
         "/",
         1,
         {{"Host", "a"}},
         0},
        {"repeated fields kept in order",
         "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nx: 2\r\nX: 3\r\n\r\n",
         "GET",
         "/",
         1,
         {{"Host", "a"}, {"X", "1"}, {"x", "2"}, {"X", "3"}},
         0},
    };
    return rows;
}

TEST(HttpParserRequest, AcceptsValidForms) {
    for (const ValidRequest& row : valid_requests()) {
        SCOPED_TRACE(row.name);
        RequestHead head;
        const ParseResult r = parse_req(row.input, head);
        ASSERT_EQ(r.status, ParseStatus::complete) << r.reason;
        EXPECT_EQ(r.consumed, row.consumed ? row.consumed : head_length(row.input));
        EXPECT_EQ(head.method, row.method);
        EXPECT_EQ(head.target, row.target);
        EXPECT_EQ(head.version_minor, row.minor);
        ASSERT_EQ(head.headers.size(), row.headers.size());
        for (std::size_t i = 0; i < row.headers.size(); ++i) {
            EXPECT_EQ(head.headers[i].name, row.headers[i].name);
            EXPECT_EQ(head.headers[i].value, row.headers[i].value);
        }
    }
}

TEST(HttpParserRequest, EveryStrictPrefixOfAValidHeadIsIncomplete) {
    for (const ValidRequest& row : valid_requests()) {
        SCOPED_TRACE(row.name);
        const std::size_t len = head_length(row.input);
        for (std::size_t n = 0; n < len; ++n) {
            RequestHead head;
            const ParseResult r = parse_req(std::string_view(row.input).substr(0, n), head);
            ASSERT_EQ(r.status, ParseStatus::incomplete) << "prefix " << n << ": " << r.reason;
            EXPECT_EQ(r.consumed, 0u);
        }
    }
}

TEST(HttpParserRequest, HeaderLookupIsCaseInsensitive) {
    RequestHead head;
    ASSERT_EQ(parse_req("GET / HTTP/1.1\r\nhost: a\r\nCONTENT-length: 3\r\n\r\n", head).status, ParseStatus::complete);
    EXPECT_EQ(head.get("Host"), "a");
    EXPECT_EQ(head.get("content-length"), "3");
    EXPECT_EQ(head.count("HOST"), 1u);
}

struct RejectedHead {
    const char* name;
    std::string input;
    int http_status;
};

const std::vector<RejectedHead>& rejected_requests() {
    static const std::vector<RejectedHead> rows = {
        // Line endings.
        {"bare LF after request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", 400},
        {"bare LF after field", "GET / HTTP/1.1\r\nHost: a\n\r\n", 400},
        {"bare LF as blank line", "GET / HTTP/1.1\r\nHost: a\r\n\n", 400},
        {"LF LF", "GET / HTTP/1.1\n\n", 400},
        {"bare CR in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400},
        {"CR CR LF", "GET / HTTP/1.1\r\nHost: a\r\r\n\r\n", 400},
        {"bare CR in request line", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"bare CR as line end", "GET / HTTP/1.1\rHost: a\r\n\r\n", 400},
        {"leading empty line", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        // Request line.
        {"leading space", " GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"tab separator", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"trailing space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
        {"space in target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"no version", "GET /\r\nHost: a\r\n\r\n", 400},
        {"no target", "GET\r\n\r\n", 400},
        {"lower-case protocol", "GET / http/1.1\r\nHost: a\r\n\r\n", 400},
        {"version without dot", "GET / HTTP/11\r\nHost: a\r\n\r\n", 400},
        {"version too long", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400},
        {"version garbage", "GET / HTTP/1.x\r\nHost: a\r\n\r\n", 400},
        {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505},
        {"HTTP/0.9", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505},
        {"non-token method", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"method with NUL", "GE\0T / HTTP/1.1\r\nHost: a\r\n\r\n"s, 400},
        {"NUL in target", "GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n"s, 400},
        {"control in target", "GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"DEL in target", "GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"high byte in target", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"fragment in target", "GET /v1#/../admin HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"fragment in absolute form", "GET http://a/x?q#f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        // Field names.
        {"space before colon", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", 400},
        {"tab before colon", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length\t: 5\r\n\r\n", 400},
        {"obs-fold after name", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding\r\n : chunked\r\n\r\n", 400},
        {"obs-fold continuation", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400},
        {"obs-fold with tab", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", 400},
        {"fold of first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400},
        {"no colon", "GET / HTTP/1.1\r\nHost a\r\n\r\n", 400},
        {"empty name", "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", 400},
        {"at sign in name", "GET / HTTP/1.1\r\nHost: a\r\nX@Y: v\r\n\r\n", 400},
        {"space in name", "GET / HTTP/1.1\r\nHost: a\r\nBad Name: v\r\n\r\n", 400},
        {"separator in name", "GET / HTTP/1.1\r\nHost: a\r\nX(Y): v\r\n\r\n", 400},
        {"NUL in name", "GET / HTTP/1.1\r\nHost: a\r\nX\0Y: v\r\n\r\n"s, 400},
        {"high byte in name", "GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: v\r\n\r\n", 400},
        // Field values.
        {"NUL in value", "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n"s, 400},
        {"NUL at value end", "GET / HTTP/1.1\r\nHost: a\r\nX: v\0\r\n\r\n"s, 400},
        {"control in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n", 400},
        {"escape in value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[31m\r\n\r\n", 400},
        {"vertical tab in TE",
         "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \x0b"
         "chunked\r\n\r\n",
         400},
        {"form feed in value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x0c\r\n\r\n", 400},
        {"DEL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400},
    };
    return rows;
}

TEST(HttpParserRequest, RejectsStrictForms) {
    for (const RejectedHead& row : rejected_requests()) {
        SCOPED_TRACE(row.name);
        RequestHead head;
        const ParseResult r = parse_req(row.input, head);
        ASSERT_EQ(r.status, ParseStatus::error);
        EXPECT_EQ(r.http_status, row.http_status) << r.reason;
        EXPECT_FALSE(r.reason.empty());
    }
}

TEST(HttpParserRequest, NoPrefixOfARejectedHeadCompletes) {
    for (const RejectedHead& row : rejected_requests()) {
        SCOPED_TRACE(row.name);
        for (std::size_t n = 0; n <= row.input.size(); ++n) {
            RequestHead head;
            const ParseResult r = parse_req(std::string_view(row.input).substr(0, n), head);
            ASSERT_NE(r.status, ParseStatus::complete) << "prefix " << n;
        }
    }
}

TEST(HttpParserRequest, ErrorReasonsNeverEchoInput) {
    const std::string marker = "S3CR3T-MARKER";
    const std::vector<std::string> inputs = {
        "GET /" + marker + "\x01 HTTP/1.1\r\n\r\n",       "GET / HTTP/1.1\r\n" + marker + " : x\r\n\r\n",
        "GET / HTTP/1.1\r\nX: " + marker + "\0\r\n\r\n"s, marker + " / HTTP/9.9\r\n\r\n",
        "GET / HTTP/1.1\r\nX: " + marker + "\n\r\n",
    };
    for (const std::string& in : inputs) {
        RequestHead head;
        const ParseResult r = parse_req(in, head);
        ASSERT_EQ(r.status, ParseStatus::error);
        EXPECT_EQ(r.reason.find("S3CR3T"), std::string::npos) << r.reason;
    }
}

TEST(HttpParserRequest, EarlyRejectionBeforeTheHeadCompletes) {
    RequestHead head;
    // Bare LF and CR fail as soon as their line is complete, so the caller can
    // stop reading; the per-byte checks wait for the complete head.
    EXPECT_EQ(parse_req("GET / HTTP/1.1\nHo", head).status, ParseStatus::error);
    EXPECT_EQ(parse_req("GET / HTTP/1.1\r\nX: a\rb\r\nHo", head).status, ParseStatus::error);
    EXPECT_EQ(parse_req("GET / HTTP/1.1\r\nBad Name: v\r\nHost: a", head).status, ParseStatus::incomplete);
    EXPECT_EQ(parse_req("GET / HTTP/1.1\r\nBad Name: v\r\nHost: a\r\n\r\n", head).status, ParseStatus::error);
    // An LF-only client gets its answer instead of a wait.
    EXPECT_EQ(parse_req("GET / HTTP/1.1\nHost: a\n\n", head).status, ParseStatus::error);
    // A CR not followed by LF in the partial line is already certain.
    EXPECT_EQ(parse_req("GET / HTTP/1.1\r\nX: a\rb", head).status, ParseStatus::error);
    // A CR at the very end may still be followed by LF.
    EXPECT_EQ(parse_req("GET / HTTP/1.1\r\nX: a\r", head).status, ParseStatus::incomplete);
}

TEST(HttpParserRequest, RequestLineLimit) {
    HeadLimits limits;
    limits.max_request_line = 64;
    const auto line_of = [](std::size_t n) {
        const std::string fixed = "GET / HTTP/1.1";
        return "GET /" + std::string(n - fixed.size(), 'a') + " HTTP/1.1";
    };
    RequestHead head;
    const std::string at_limit = line_of(64);
    ASSERT_EQ(at_limit.size(), 64u);
    EXPECT_EQ(parse_req(at_limit + "\r\nHost: a\r\n\r\n", head, limits).status, ParseStatus::complete);
    const ParseResult over = parse_req(line_of(65) + "\r\nHost: a\r\n\r\n", head, limits);
    EXPECT_EQ(over.status, ParseStatus::error);
    EXPECT_EQ(over.http_status, 414);

    // Before any CRLF: exactly the limit (and its CR) may still be valid...
    EXPECT_EQ(parse_req(at_limit, head, limits).status, ParseStatus::incomplete);
    EXPECT_EQ(parse_req(at_limit + "\r", head, limits).status, ParseStatus::incomplete);
    // ...one byte more cannot be.
    const ParseResult partial = parse_req(std::string(65, 'a'), head, limits);
    EXPECT_EQ(partial.status, ParseStatus::error);
    EXPECT_EQ(partial.http_status, 414);
}

TEST(HttpParserRequest, HeadByteLimit) {
    HeadLimits limits;
    limits.max_head_bytes = 100;
    const std::string start = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
    const auto head_of = [&](std::size_t total) {
        return start + std::string(total - start.size() - 4, 'v') + "\r\n\r\n";
    };
    RequestHead head;
    const std::string exact = head_of(100);
    ASSERT_EQ(exact.size(), 100u);
    const ParseResult ok = parse_req(exact + "GET /next HTTP/1.1\r\n" + std::string(500, 'x'), head, limits);
    EXPECT_EQ(ok.status, ParseStatus::complete) << "pipelined bytes past the limit do not count";
    EXPECT_EQ(ok.consumed, 100u);

    const ParseResult big = parse_req(head_of(101), head, limits);
    EXPECT_EQ(big.status, ParseStatus::error);
    EXPECT_EQ(big.http_status, 431);

    // Without a blank line: incomplete up to the limit, 431 past it.
    EXPECT_EQ(parse_req(exact.substr(0, 100 - 2), head, limits).status, ParseStatus::incomplete);
    const std::string endless = start + std::string(200, 'v');
    EXPECT_EQ(parse_req(endless.substr(0, 100), head, limits).status, ParseStatus::incomplete);
    const ParseResult r = parse_req(endless.substr(0, 101), head, limits);
    EXPECT_EQ(r.status, ParseStatus::error);
    EXPECT_EQ(r.http_status, 431);
}

TEST(HttpParserRequest, HeaderCountLimit) {
    HeadLimits limits;
    limits.max_header_count = 5;
    const auto head_with = [](int fields, bool terminated) {
        std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
        for (int i = 1; i < fields; ++i) s += "X-" + std::to_string(i) + ": v\r\n";
        return terminated ? s + "\r\n" : s;
    };
    RequestHead head;
    EXPECT_EQ(parse_req(head_with(5, true), head, limits).status, ParseStatus::complete);
    EXPECT_EQ(head.headers.size(), 5u);
    const ParseResult r = parse_req(head_with(6, true), head, limits);
    EXPECT_EQ(r.status, ParseStatus::error);
    EXPECT_EQ(r.http_status, 431);
    const ParseResult early = parse_req(head_with(6, false), head, limits);
    EXPECT_EQ(early.status, ParseStatus::error) << "refused before the blank line arrives";
    EXPECT_EQ(early.http_status, 431);
}

TEST(HttpParserRequest, EmptyAndTinyInputs) {
    RequestHead head;
    EXPECT_EQ(parse_req(std::string_view{}, head).status, ParseStatus::incomplete);
    EXPECT_EQ(parse_req("G", head).status, ParseStatus::incomplete);
    EXPECT_EQ(parse_req("\r", head).status, ParseStatus::incomplete);
    EXPECT_EQ(parse_req("\n", head).status, ParseStatus::error);
    HeadLimits zero;
    zero.max_head_bytes = 0;
    zero.max_request_line = 0;
    zero.max_header_count = 0;
    EXPECT_EQ(parse_req("", head, zero).status, ParseStatus::incomplete);
    EXPECT_EQ(parse_req("G", head, zero).status, ParseStatus::error);
}

// ---------------------------------------------------------------- responses

TEST(HttpParserResponse, AcceptsValidForms) {
    struct Row {
        const char* name;
        std::string input;
        int minor;
        int status;
        std::string reason;
        std::size_t fields;
    };
    const std::vector<Row> rows = {
        {"ok", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, 200, "OK", 1},
        {"no reason, no space", "HTTP/1.1 200\r\n\r\n", 1, 200, "", 0},
        {"empty reason", "HTTP/1.1 204 \r\n\r\n", 1, 204, "", 0},
        {"http10", "HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\n", 0, 404, "Not Found", 1},
        {"reason with tab and obs-text", "HTTP/1.1 200 O\tK \xc3\xa9\r\n\r\n", 1, 200, "O\tK \xc3\xa9", 0},
        {"1xx then final response", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", 1, 100, "Continue", 0},
        {"odd but 3-digit code", "HTTP/1.1 999 Request Denied\r\n\r\n", 1, 999, "Request Denied", 0},
    };
    for (const Row& row : rows) {
        SCOPED_TRACE(row.name);
        ResponseHead head;
        const ParseResult r = parse_resp(row.input, head);
        ASSERT_EQ(r.status, ParseStatus::complete) << r.reason;
        EXPECT_EQ(r.consumed, head_length(row.input));
        EXPECT_EQ(head.version_minor, row.minor);
        EXPECT_EQ(head.status, row.status);
        EXPECT_EQ(head.reason, row.reason);
        EXPECT_EQ(head.headers.size(), row.fields);
    }
}

TEST(HttpParserResponse, RejectsStrictForms) {
    const std::vector<RejectedHead> rows = {
        {"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", 400},
        {"four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", 400},
        {"status below 100", "HTTP/1.1 099 Odd\r\n\r\n", 400},
        {"letters in status", "HTTP/1.1 2x0 OK\r\n\r\n", 400},
        {"double space", "HTTP/1.1  200 OK\r\n\r\n", 400},
        {"tab before reason", "HTTP/1.1 200\tOK\r\n\r\n", 400},
        {"no status", "HTTP/1.1\r\n\r\n", 400},
        {"HTTP/2", "HTTP/2 200 OK\r\n\r\n", 400},
        {"HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", 505},
        {"lower-case protocol", "http/1.1 200 OK\r\n\r\n", 400},
        {"control in reason", "HTTP/1.1 200 O\x01K\r\n\r\n", 400},
        {"NUL in reason", "HTTP/1.1 200 O\0K\r\n\r\n"s, 400},
        {"bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", 400},
        {"bare CR in field", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", 400},
        {"obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", 400},
        {"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", 400},
        {"NUL in value", "HTTP/1.1 200 OK\r\nX: \0\r\n\r\n"s, 400},
        {"leading empty line", "\r\nHTTP/1.1 200 OK\r\n\r\n", 400},
    };
    for (const RejectedHead& row : rows) {
        SCOPED_TRACE(row.name);
        ResponseHead head;
        const ParseResult r = parse_resp(row.input, head);
        ASSERT_EQ(r.status, ParseStatus::error);
        EXPECT_EQ(r.http_status, row.http_status) << r.reason;
    }
}

// ---------------------------------------------------------------- serialisation

TEST(HttpSerialize, ParsedHeadsRoundTrip) {
    for (const ValidRequest& row : valid_requests()) {
        SCOPED_TRACE(row.name);
        RequestHead first;
        ASSERT_EQ(parse_req(row.input, first).status, ParseStatus::complete);
        const std::string wire = serialize_request_head(first);
        RequestHead second;
        const ParseResult r = parse_req(wire, second);
        ASSERT_EQ(r.status, ParseStatus::complete) << r.reason;
        EXPECT_EQ(r.consumed, wire.size());
        EXPECT_EQ(serialize_request_head(second), wire);
    }
}

// ---------------------------------------------------------------- robustness

// Mutates valid heads with the bytes that matter to framing and checks the
// invariants: no read past the input, consumed within bounds, a longer buffer
// never turns an error or a complete head into something else, and whatever is
// accepted re-serialises to a head that parses to the same thing.
TEST(HttpParserRobustness, MutatedHeadsKeepInvariants) {
    std::mt19937 rng(1234);
    const std::string alphabet = "\r\n\0\t :,;aZ0\x7f\x80\xff-"s;
    HeadLimits limits;
    limits.max_head_bytes = 256;
    limits.max_request_line = 64;
    limits.max_header_count = 8;
    int completed = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        std::string s = valid_requests()[rng() % valid_requests().size()].input;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = rng() % (s.size() + 1);
            const char c = alphabet[rng() % alphabet.size()];
            switch (rng() % 3) {
                case 0:
                    s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
                    break;
                case 1:
                    if (at < s.size()) s[at] = c;
                    break;
                default:
                    if (at < s.size()) s.erase(at, 1);
                    break;
            }
        }
        ParseResult previous;
        for (std::size_t n = 0; n <= s.size(); ++n) {
            // A fresh copy of exactly n bytes, so ASan sees any read past the end.
            const std::string prefix = s.substr(0, n);
            RequestHead head;
            const ParseResult r = parse_req(prefix, head, limits);
            if (previous.status == ParseStatus::error) {
                ASSERT_EQ(r.status, ParseStatus::error) << s;
            }
            if (previous.status == ParseStatus::complete) {
                ASSERT_EQ(r.status, ParseStatus::complete) << s;
                ASSERT_EQ(r.consumed, previous.consumed) << s;
            }
            previous = r;
            if (r.status != ParseStatus::complete) continue;
            if (n == s.size()) ++completed;
            ASSERT_LE(r.consumed, n);
            ASSERT_LE(r.consumed, limits.max_head_bytes);
            const std::string wire = serialize_request_head(head);
            RequestHead again;
            ASSERT_EQ(parse_req(wire, again).status, ParseStatus::complete) << s;
            ASSERT_EQ(serialize_request_head(again), wire);
        }
    }
    EXPECT_GT(completed, 400) << "the mutations should leave many heads acceptable";
}

}  // namespace
}  // namespace vaultgate
