// Strict HTTP/1.1 head parsing, framing validation and serialisation.
//
// This is the request-smuggling defence: a message the proxy reads in one way
// and the origin could read in another is refused, never "repaired". Inputs are
// only ever read through bounds-checked views, and error reasons are fixed
// strings so that no client byte can reach a response or a log through them.
#include "vaultgate/http/message.hpp"

#include "vaultgate/http/syntax.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace vaultgate {
namespace {

using syntax::npos;

struct Failure {
    int http_status;
    const char* reason;
};

ParseResult error_result(int http_status, const char* reason) {
    ParseResult r;
    r.status = ParseStatus::error;
    r.http_status = http_status;
    r.reason = reason;
    return r;
}

// Checks "HTTP/1.0" or "HTTP/1.1". A well-formed but other version is a 505,
// anything else a 400.
std::optional<Failure> parse_version(std::string_view v, int& minor) {
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !digit(v[5]) || v[6] != '.' || !digit(v[7]))
        return Failure{400, "malformed HTTP version"};
    if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) return Failure{505, "unsupported HTTP version"};
    minor = v[7] - '0';
    return std::nullopt;
}

struct RequestLine {
    std::string_view method;
    std::string_view target;
    int minor = 1;
};

std::optional<Failure> parse_request_line(std::string_view line, RequestLine& out) {
    const std::size_t sp1 = syntax::find_byte(line, ' ');
    if (sp1 == npos) return Failure{400, "malformed request line"};
    out.method = line.substr(0, sp1);
    if (!syntax::is_token(out.method)) return Failure{400, "invalid method"};
    const std::string_view rest = line.substr(sp1 + 1);
    const std::size_t sp2 = syntax::find_byte(rest, ' ');
    if (sp2 == npos) return Failure{400, "malformed request line"};
    out.target = rest.substr(0, sp2);
    if (out.target.empty()) return Failure{400, "empty request target"};
    // Only visible ASCII: raw UTF-8 or controls in a target are read differently
    // by different servers, and a valid target percent-encodes them anyway.
    if (!syntax::all_of_class(out.target, syntax::target_char))
        return Failure{400, "invalid character in request target"};
    // A fragment is never part of a request target (RFC 9112 3.2); forwarded,
    // origins would each cut the path at it, or not.
    if (syntax::find_byte(out.target, '#') != npos) return Failure{400, "a fragment ('#') in the request target"};
    return parse_version(rest.substr(sp2 + 1), out.minor);
}

struct StatusLine {
    int minor = 1;
    int status = 0;
    std::string_view reason;
};

std::optional<Failure> parse_status_line(std::string_view line, StatusLine& out) {
    if (line.size() < 12 || line[8] != ' ') return Failure{400, "malformed status line"};
    if (auto f = parse_version(line.substr(0, 8), out.minor)) return f;
    int status = 0;
    for (std::size_t i = 9; i < 12; ++i) {
        if (line[i] < '0' || line[i] > '9') return Failure{400, "malformed status code"};
        status = status * 10 + (line[i] - '0');
    }
    if (status < 100) return Failure{400, "malformed status code"};
    out.status = status;
    // "HTTP/1.1 200" without the space before an empty reason is common enough
    // to tolerate; anything after the code must be a space and then the reason.
    if (line.size() == 12) {
        out.reason = {};
        return std::nullopt;
    }
    if (line[12] != ' ') return Failure{400, "malformed status line"};
    out.reason = line.substr(13);
    if (!syntax::all_of_class(out.reason, syntax::field_char))
        return Failure{400, "invalid character in reason phrase"};
    return std::nullopt;
}

struct HeadShape {
    std::size_t end = npos;       // length through the blank line, or npos
    std::size_t lines = 0;        // complete lines before the blank line
    std::size_t first_line = 0;   // length of the start line without CRLF
    std::size_t tail = 0;         // offset of the incomplete last line
    const char* error = nullptr;  // bare CR or LF found on the way
};

// Finds where the head ends, and refuses bare CR and LF as soon as their line
// is complete. Only memchr runs here: a client that trickles its head in one
// byte per read costs one cheap pass per read, and the per-byte checks run
// once, when the head is complete.
HeadShape locate_head(std::string_view window) {
    HeadShape shape;
    std::size_t pos = 0;
    while (true) {
        const std::string_view rest = window.substr(pos);
        const std::size_t lf = syntax::find_byte(rest, '\n');
        if (lf == npos) break;
        // The blank line after the start line. A bare "\n" counts too, so that
        // an LF-only client is answered (400) rather than left waiting.
        if (shape.lines > 0 && (lf == 0 || (lf == 1 && rest[0] == '\r'))) {
            shape.end = pos + lf + 1;
            return shape;
        }
        if (lf == 0 || rest[lf - 1] != '\r') {
            shape.error = "bare LF";
            return shape;
        }
        if (syntax::find_byte(rest.substr(0, lf - 1), '\r') != npos) {
            shape.error = "bare CR";
            return shape;
        }
        if (shape.lines == 0) shape.first_line = lf - 1;
        ++shape.lines;
        pos += lf + 1;
    }
    shape.tail = pos;
    return shape;
}

// The verdict on a head that is not complete yet: an error if a limit is
// already exceeded or the partial line is already wrong, so that the caller can
// stop reading; incomplete otherwise.
ParseResult incomplete_verdict(std::string_view buf, std::string_view window, const HeadShape& shape,
                               const HeadLimits& limits) {
    const std::string_view tail = window.substr(shape.tail);
    const std::size_t cr = syntax::find_byte(tail, '\r');
    if (cr != npos && cr + 1 < tail.size()) return error_result(400, "bare CR");
    // A CR at the very end may still be the start of the CRLF; it is not line content.
    const std::size_t first_line = shape.lines > 0 ? shape.first_line : tail.size() - (cr == npos ? 0 : 1);
    if (first_line > limits.max_request_line) return error_result(414, "start line too long");
    if (shape.lines > 0 && shape.lines - 1 > limits.max_header_count)
        return error_result(431, "too many header fields");
    if (buf.size() > limits.max_head_bytes) return error_result(431, "header section too large");
    return ParseResult{};
}

// Parses the head at the front of `buf`: the start line goes to `first_line`,
// the fields are appended to `fields`.
template <typename FirstLine>
ParseResult parse_head(std::string_view buf, const HeadLimits& limits, FirstLine&& first_line,
                       std::vector<Header>& fields) {
    // Nothing past max_head_bytes can belong to an acceptable head, so no scan
    // looks further, whatever the caller has buffered.
    const std::string_view window = buf.substr(0, std::min(buf.size(), limits.max_head_bytes));
    const HeadShape shape = locate_head(window);
    if (shape.error != nullptr) return error_result(400, shape.error);
    if (shape.end == npos) return incomplete_verdict(buf, window, shape, limits);

    const std::string_view head = window.substr(0, shape.end);
    fields.reserve(std::min(shape.lines > 0 ? shape.lines - 1 : 0, limits.max_header_count));
    std::size_t pos = 0;
    bool in_start_line = true;
    while (pos < head.size()) {
        const std::string_view rest = head.substr(pos);
        const std::size_t lf = syntax::find_byte(rest, '\n');
        if (lf == npos || lf == 0 || rest[lf - 1] != '\r') return error_result(400, "bare LF");
        const std::string_view line = rest.substr(0, lf - 1);
        pos += lf + 1;

        if (in_start_line) {
            // RFC 9112 lets a server skip empty lines here; refusing them keeps
            // one reading of the stream across every hop.
            if (line.empty()) return error_result(400, "empty line before start line");
            if (line.size() > limits.max_request_line) return error_result(414, "start line too long");
            if (std::optional<Failure> f = first_line(line)) return error_result(f->http_status, f->reason);
            in_start_line = false;
            continue;
        }
        if (line.empty()) {
            ParseResult r;
            r.status = ParseStatus::complete;
            r.consumed = pos;
            return r;
        }
        if (fields.size() >= limits.max_header_count) return error_result(431, "too many header fields");
        syntax::FieldLine field;
        if (const char* reason = syntax::parse_field_line(line, field)) return error_result(400, reason);
        fields.push_back(Header{std::string(field.name), std::string(field.value)});
    }
    // Unreachable: locate_head ended the head at a blank line.
    return error_result(400, "malformed header section");
}

// Content-Length = 1*DIGIT. Nineteen digits always fit in uint64; more would be
// an absurd body length anyway, so the cap also rules out overflow.
std::optional<std::uint64_t> parse_content_length(std::string_view v) {
    if (v.empty() || v.size() > 19) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : v) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
}

FramingResult framing_error(const char* reason) {
    FramingResult r;
    r.reason = reason;
    return r;
}

FramingResult framing_of(BodyKind kind, std::uint64_t length = 0) {
    FramingResult r;
    r.framing = BodyFraming{kind, length};
    return r;
}

bool has_connection_token(const std::vector<Header>& headers, std::string_view token) {
    bool found = false;
    for (const Header& h : headers) {
        if (!iequals(h.name, "connection")) continue;
        syntax::for_each_list_element(h.value, [&](std::string_view t) { found = found || iequals(t, token); });
    }
    return found;
}

void append_version(std::string& out, int minor) {
    out += "HTTP/1.";
    out += static_cast<char>('0' + std::clamp(minor, 0, 9));
}

std::size_t headers_size(const std::vector<Header>& headers) {
    std::size_t n = 2;  // the blank line
    for (const Header& h : headers) n += h.name.size() + h.value.size() + 4;
    return n;
}

void append_headers(std::string& out, const std::vector<Header>& headers) {
    for (const Header& h : headers) {
        out += h.name;
        out += ": ";
        out += h.value;
        out += "\r\n";
    }
    out += "\r\n";
}

}  // namespace

ParseResult parse_request_head(std::string_view buf, const HeadLimits& limits, RequestHead& out) {
    RequestLine start;
    std::vector<Header> fields;
    ParseResult r = parse_head(
        buf, limits, [&](std::string_view line) { return parse_request_line(line, start); }, fields);
    if (r.status != ParseStatus::complete) return r;
    out.method.assign(start.method);
    out.target.assign(start.target);
    out.version_minor = start.minor;
    out.headers = std::move(fields);
    return r;
}

ParseResult parse_response_head(std::string_view buf, const HeadLimits& limits, ResponseHead& out) {
    StatusLine start;
    std::vector<Header> fields;
    ParseResult r = parse_head(
        buf, limits, [&](std::string_view line) { return parse_status_line(line, start); }, fields);
    if (r.status != ParseStatus::complete) return r;
    out.version_minor = start.minor;
    out.status = start.status;
    out.reason.assign(start.reason);
    out.headers = std::move(fields);
    return r;
}

FramingResult request_framing(const RequestHead& head) {
    const Header* host = nullptr;
    const Header* te = nullptr;
    const Header* cl = nullptr;
    std::size_t host_count = 0, te_count = 0, cl_count = 0;
    for (const Header& h : head.headers) {
        if (iequals(h.name, "host")) {
            host = &h;
            ++host_count;
        } else if (iequals(h.name, "transfer-encoding")) {
            te = &h;
            ++te_count;
        } else if (iequals(h.name, "content-length")) {
            cl = &h;
            ++cl_count;
        }
    }

    // The Host check belongs here because the MITM path matches Host against the
    // CONNECT authority: two Hosts would let the origin pick the other one.
    if (host_count > 1) return framing_error("multiple host headers");
    if (host_count == 1 && host->value.empty()) return framing_error("empty host header");
    if (host_count == 0 && head.version_minor >= 1) return framing_error("missing host header");

    if (te_count > 0) {
        if (head.version_minor == 0) return framing_error("transfer-encoding on HTTP/1.0");
        if (cl_count > 0) return framing_error("content-length with transfer-encoding");
        if (te_count > 1) return framing_error("multiple transfer-encoding headers");
        // Exactly one coding, "chunked": a list, a parameter or an unknown coding
        // is where proxies and origins disagree about the body's end.
        if (!iequals(te->value, "chunked")) return framing_error("unsupported transfer-encoding");
        return framing_of(BodyKind::chunked);
    }
    if (cl_count > 1) return framing_error("multiple content-length headers");
    if (cl_count == 1) {
        const std::optional<std::uint64_t> n = parse_content_length(cl->value);
        if (!n) return framing_error("invalid content-length");
        return framing_of(BodyKind::content_length, *n);
    }
    return framing_of(BodyKind::none);
}

FramingResult response_framing(const ResponseHead& head, std::string_view request_method) {
    // RFC 9112 section 6.3, in its order. Method names are case-sensitive.
    if (request_method == "HEAD") return framing_of(BodyKind::none);
    if (head.status < 200 || head.status == 204 || head.status == 304) return framing_of(BodyKind::none);
    if (request_method == "CONNECT" && head.status < 300) return framing_of(BodyKind::none);

    const Header* te = nullptr;
    std::size_t te_count = 0, cl_count = 0;
    for (const Header& h : head.headers) {
        if (iequals(h.name, "transfer-encoding")) {
            te = &h;
            ++te_count;
        } else if (iequals(h.name, "content-length")) {
            ++cl_count;
        }
    }

    if (te_count > 0) {
        // RFC 9112 lets TE override CL, but calls the pair a smuggling signal and
        // makes TE on 1.0 faulty framing; a bound origin has no reason for either.
        if (head.version_minor == 0) return framing_error("transfer-encoding in HTTP/1.0 response");
        if (cl_count > 0) return framing_error("content-length with transfer-encoding");
        // Only plain "chunked": the decoded payload is forwarded without the
        // Transfer-Encoding header, so any other coding (gzip, ...) would reach
        // the client unlabelled and slip past response redaction.
        if (te_count > 1 || !iequals(te->value, "chunked")) return framing_error("unsupported transfer-encoding");
        return framing_of(BodyKind::chunked);
    }

    if (cl_count > 0) {
        // Responses may repeat one value (RFC 9110 section 8.6); differing values
        // leave the end of the body unknown.
        std::optional<std::uint64_t> length;
        bool ok = true;
        for (const Header& h : head.headers) {
            if (!iequals(h.name, "content-length")) continue;
            bool any = false;
            syntax::for_each_list_element(h.value, [&](std::string_view element) {
                any = true;
                const std::optional<std::uint64_t> n = parse_content_length(element);
                if (!n || (length && *length != *n)) ok = false;
                if (n && !length) length = n;
            });
            if (!any) ok = false;
        }
        if (!ok || !length) return framing_error("invalid or conflicting content-length");
        return framing_of(BodyKind::content_length, *length);
    }
    return framing_of(BodyKind::until_close);
}

bool is_hop_by_hop(std::string_view name) {
    static constexpr std::array<std::string_view, 9> fields = {
        "connection", "keep-alive",        "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
        "trailer",    "transfer-encoding", "upgrade",
    };
    return std::any_of(fields.begin(), fields.end(), [&](std::string_view f) { return iequals(f, name); });
}

std::vector<std::string> connection_tokens(const std::vector<Header>& headers) {
    std::vector<std::string> tokens;
    for (const Header& h : headers) {
        if (!iequals(h.name, "connection")) continue;
        syntax::for_each_list_element(h.value, [&](std::string_view t) {
            std::string lower(t);
            for (char& c : lower)
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
            tokens.push_back(std::move(lower));
        });
    }
    return tokens;
}

bool listed_in(const std::vector<std::string>& tokens, std::string_view name) {
    for (const auto& t : tokens)
        if (iequals(t, name)) return true;
    return false;
}

bool wants_close(const std::vector<Header>& headers, int version_minor) {
    if (has_connection_token(headers, "close")) return true;
    return version_minor == 0 && !has_connection_token(headers, "keep-alive");
}

std::string serialize_request_head(const RequestHead& head) {
    std::string out;
    out.reserve(head.method.size() + head.target.size() + 12 + headers_size(head.headers));
    out += head.method;
    out += ' ';
    out += head.target;
    out += ' ';
    append_version(out, head.version_minor);
    out += "\r\n";
    append_headers(out, head.headers);
    return out;
}

std::string serialize_response_head(const ResponseHead& head) {
    std::array<char, 16> code{};
    const auto [end, ec] = std::to_chars(code.data(), code.data() + code.size(), head.status);
    const std::string_view status(code.data(), ec == std::errc{} ? static_cast<std::size_t>(end - code.data()) : 0);

    std::string out;
    out.reserve(16 + status.size() + head.reason.size() + headers_size(head.headers));
    append_version(out, head.version_minor);
    out += ' ';
    out += status;
    // The space stays even before an empty reason: status-line requires it.
    out += ' ';
    out += head.reason;
    out += "\r\n";
    append_headers(out, head.headers);
    return out;
}

}  // namespace vaultgate
