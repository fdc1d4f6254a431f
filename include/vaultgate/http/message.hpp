#pragma once
// HTTP/1.1 message heads: a strict parser, the framing validator and the
// serialiser. vaultgate re-serialises every forwarded request from these parsed
// fields; raw client bytes are never relayed to a bound origin. No I/O here.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

struct Header {
    std::string name;
    std::string value;
};

struct HeadLimits {
    std::size_t max_head_bytes = 65536;   // request line + headers (431, or 414 for the line)
    std::size_t max_header_count = 100;   // 431
    std::size_t max_request_line = 8192;  // 414
};

struct RequestHead {
    std::string method;
    std::string target;     // as sent: origin-form, absolute-form or authority-form
    int version_minor = 1;  // HTTP/1.<minor>; only 1.0 and 1.1 are accepted
    std::vector<Header> headers;

    // First value of a header (case-insensitive), or nullopt.
    std::optional<std::string_view> get(std::string_view name) const;
    std::size_t count(std::string_view name) const;
    void remove(std::string_view name);                  // every copy, case-insensitive
    void set(std::string_view name, std::string value);  // remove then append
};

struct ResponseHead {
    int version_minor = 1;
    int status = 0;
    std::string reason;
    std::vector<Header> headers;

    std::optional<std::string_view> get(std::string_view name) const;
    std::size_t count(std::string_view name) const;
    void remove(std::string_view name);
    void set(std::string_view name, std::string value);
};

enum class ParseStatus { incomplete, complete, error };

struct ParseResult {
    ParseStatus status = ParseStatus::incomplete;
    std::size_t consumed = 0;  // bytes of the head, including the final CRLFCRLF
    int http_status = 0;       // on error: 400, 414, 431, 501, 505
    std::string reason;        // on error: short, fixed text; never echoes input bytes
};

// Parses one request head from the front of `buf`. Returns incomplete until the
// blank line is seen (and errors out as soon as a limit is exceeded, so callers
// can stop reading). Rejects: bare CR or LF, NUL and control bytes, obs-fold,
// non-token header names, whitespace before the colon, bad versions.
ParseResult parse_request_head(std::string_view buf, const HeadLimits& limits, RequestHead& out);

// Same for a response head from an upstream.
ParseResult parse_response_head(std::string_view buf, const HeadLimits& limits, ResponseHead& out);

enum class BodyKind { none, content_length, chunked, until_close };

struct BodyFraming {
    BodyKind kind = BodyKind::none;
    std::uint64_t length = 0;  // content_length
};

struct FramingResult {
    std::optional<BodyFraming> framing;
    std::string reason;  // on error (always a 400)
};

// Request framing, strictly: CL with TE, TE other than exactly "chunked", TE on
// HTTP/1.0, several or malformed Content-Length values, several or empty Host
// headers are refused.
FramingResult request_framing(const RequestHead& head);

// Response framing per RFC 9112 section 6.3, given the request method.
FramingResult response_framing(const ResponseHead& head, std::string_view request_method);

// Hop-by-hop fields: Connection, Keep-Alive, Proxy-*, TE, Trailer,
// Transfer-Encoding, Upgrade. Fields named in Connection are hop-by-hop too;
// connection_tokens() lists them.
bool is_hop_by_hop(std::string_view name);

// The tokens of every Connection header, lower-cased, in order.
std::vector<std::string> connection_tokens(const std::vector<Header>& headers);

// Whether `name` is among `tokens` (connection_tokens), in any letter case.
bool listed_in(const std::vector<std::string>& tokens, std::string_view name);

// Whether the peer asked to close after this message (Connection: close, or 1.0 without keep-alive).
bool wants_close(const std::vector<Header>& headers, int version_minor);

// Serialises a head (HTTP/1.1 request line or status line, headers, blank line).
std::string serialize_request_head(const RequestHead& head);
std::string serialize_response_head(const ResponseHead& head);

bool iequals(std::string_view a, std::string_view b);

// Splits "<scheme>authority/path?q" (`scheme` such as "http://", matched in
// any letter case) into the authority and the origin-form rest, without the
// fragment. False for another scheme, or for userinfo
// ("http://allowed@evil/"), which only ever confuses readers.
bool split_absolute_url(std::string_view url, std::string_view scheme, std::string_view& authority,
                        std::string& origin_form);

struct ChunkLimits {
    std::size_t max_chunk_size_digits = 16;  // hex digits in a chunk-size
    std::size_t max_extension_bytes = 1024;  // per chunk line
    std::size_t max_trailer_bytes = 8192;
    std::size_t max_trailer_count = 32;
};

// Incremental chunked-body decoder. Feed it bytes as they arrive; it appends
// decoded payload to `out` and says how much input it consumed. Trailers that
// are framing or hop-by-hop fields are an error; other trailers are dropped.
class ChunkedDecoder {
public:
    explicit ChunkedDecoder(ChunkLimits limits = {}) : limits_(limits) {}

    enum class Status { need_more, done, error };
    struct Step {
        Status status;
        std::size_t consumed;
    };
    Step feed(std::string_view in, std::string& out);
    const std::string& error() const { return error_; }
    bool done() const { return state_ == State::done; }

private:
    enum class State { size, size_lf, data, data_cr, data_lf, trailer, trailer_lf, done, failed };
    Step fail(std::string reason, std::size_t consumed);

    ChunkLimits limits_;
    State state_ = State::size;
    std::string line_;  // current chunk-size or trailer line
    std::uint64_t remaining_ = 0;
    std::size_t trailer_bytes_ = 0;
    std::size_t trailer_count_ = 0;
    std::string error_;
};

// Frames `payload` as one chunk ("<hex>\r\n<payload>\r\n"); empty payload -> nothing.
void append_chunk(std::string& out, std::string_view payload);
inline constexpr std::string_view last_chunk = "0\r\n\r\n";

}  // namespace vaultgate
