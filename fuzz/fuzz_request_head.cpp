// Fuzzes the request-head parser and the request framing validator: the code
// that decides where one client request ends and what is forwarded upstream.
#include "fuzz_check.hpp"

#include "vaultgate/http/message.hpp"

#include <string>
#include <string_view>

using namespace vaultgate;
using vaultgate::fuzz::as_view;
using vaultgate::fuzz::is_plain_reason;

namespace {

// Small enough that the fuzzer reaches every limit with short inputs.
constexpr HeadLimits small_limits{512, 8, 128};
// Large enough that nothing the fuzzer sends (or its re-serialisation) hits them.
constexpr HeadLimits roomy_limits{1 << 20, 1 << 16, 1 << 20};

bool has_byte(std::string_view s, std::string_view bytes) { return s.find_first_of(bytes) != std::string_view::npos; }

// A parsed head is re-serialised and sent upstream, so nothing in it may carry
// a line break or NUL that would start a new header or request over there.
void check_clean(const RequestHead& head) {
    using namespace std::string_view_literals;
    const std::string_view breaks = "\r\n\0"sv;
    FUZZ_CHECK(!head.method.empty() && !has_byte(head.method, breaks) && !has_byte(head.method, " \t:"));
    FUZZ_CHECK(!head.target.empty() && !has_byte(head.target, breaks) && !has_byte(head.target, " \t"));
    FUZZ_CHECK(head.version_minor == 0 || head.version_minor == 1);
    for (const Header& h : head.headers) {
        FUZZ_CHECK(!h.name.empty() && !has_byte(h.name, breaks) && !has_byte(h.name, " \t:"));
        FUZZ_CHECK(!has_byte(h.value, breaks));
        // Values are OWS-trimmed; a leading space would read as obs-fold elsewhere.
        FUZZ_CHECK(h.value.empty() || (h.value.front() != ' ' && h.value.front() != '\t'));
        FUZZ_CHECK(h.value.empty() || (h.value.back() != ' ' && h.value.back() != '\t'));
    }
}

bool same_head(const RequestHead& a, const RequestHead& b) {
    if (a.method != b.method || a.target != b.target || a.version_minor != b.version_minor) return false;
    if (a.headers.size() != b.headers.size()) return false;
    for (std::size_t i = 0; i < a.headers.size(); ++i)
        if (a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value) return false;
    return true;
}

bool same_framing(const FramingResult& a, const FramingResult& b) {
    if (a.framing.has_value() != b.framing.has_value()) return false;
    if (!a.framing) return a.reason == b.reason;
    return a.framing->kind == b.framing->kind && a.framing->length == b.framing->length;
}

bool is_head_status(int s) { return s == 400 || s == 414 || s == 431 || s == 501 || s == 505; }

// What the validator promises, checked against the header counts directly: an
// accepted request has one unambiguous framing and one Host.
void check_framing(const RequestHead& head, const FramingResult& f) {
    const std::size_t te = head.count("transfer-encoding");
    const std::size_t cl = head.count("content-length");
    const std::size_t host = head.count("host");
    if (!f.framing) {
        FUZZ_CHECK(is_plain_reason(f.reason));
        return;
    }
    FUZZ_CHECK(te <= 1 && cl <= 1 && !(te == 1 && cl == 1));
    FUZZ_CHECK(host <= 1);
    FUZZ_CHECK(head.version_minor == 0 || host == 1);
    if (host == 1) FUZZ_CHECK(!head.get("host")->empty());
    switch (f.framing->kind) {
        case BodyKind::chunked:
            FUZZ_CHECK(te == 1 && head.version_minor == 1 && iequals(*head.get("transfer-encoding"), "chunked"));
            break;
        case BodyKind::content_length: {
            FUZZ_CHECK(cl == 1 && te == 0);
            const std::string_view v = *head.get("content-length");
            FUZZ_CHECK(!v.empty() && v.find_first_not_of("0123456789") == std::string_view::npos);
            // The decimal value, recomputed; parse_content_length caps it at 19 digits.
            std::uint64_t n = 0;
            for (char c : v) n = n * 10 + static_cast<std::uint64_t>(c - '0');
            FUZZ_CHECK(n == f.framing->length);
            break;
        }
        case BodyKind::none:
            FUZZ_CHECK(te == 0 && cl == 0);
            break;
        case BodyKind::until_close:
            // A request body can never be delimited by closing the connection.
            FUZZ_CHECK(false);
            break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in = as_view(data, size);

    RequestHead head;
    const ParseResult r = parse_request_head(in, small_limits, head);

    // Limits may only turn a result into an error; they never change what a
    // complete head parses to.
    RequestHead roomy;
    const ParseResult rr = parse_request_head(in, roomy_limits, roomy);

    if (r.status == ParseStatus::error) {
        FUZZ_CHECK(is_head_status(r.http_status));
        FUZZ_CHECK(is_plain_reason(r.reason));
    }
    if (rr.status == ParseStatus::error) {
        FUZZ_CHECK(is_head_status(rr.http_status));
        FUZZ_CHECK(is_plain_reason(rr.reason));
        // Only limit errors (414/431) may depend on the limits.
        FUZZ_CHECK(r.status == ParseStatus::error);
    }
    if (r.status == ParseStatus::incomplete) FUZZ_CHECK(rr.status == ParseStatus::incomplete);
    if (r.status != ParseStatus::complete) return 0;

    FUZZ_CHECK(rr.status == ParseStatus::complete && rr.consumed == r.consumed && same_head(head, roomy));
    FUZZ_CHECK(r.consumed >= 4 && r.consumed <= size && r.consumed <= small_limits.max_head_bytes);
    FUZZ_CHECK(in.substr(r.consumed - 4, 4) == "\r\n\r\n");
    FUZZ_CHECK(head.headers.size() <= small_limits.max_header_count);
    check_clean(head);

    // The bytes after the head are the body or the next request; they must not
    // influence the head.
    {
        RequestHead exact;
        const ParseResult e = parse_request_head(in.substr(0, r.consumed), small_limits, exact);
        FUZZ_CHECK(e.status == ParseStatus::complete && e.consumed == r.consumed && same_head(exact, head));
    }
    // A caller that stops reading on an error must never stop on a prefix of a
    // head it would have accepted: every prefix is just incomplete.
    for (const std::size_t cut : {r.consumed - 1, r.consumed / 2, std::size_t{1}}) {
        RequestHead partial;
        const ParseResult p = parse_request_head(in.substr(0, cut), small_limits, partial);
        FUZZ_CHECK(p.status == ParseStatus::incomplete);
    }

    const FramingResult framing = request_framing(head);
    check_framing(head, framing);

    // The forwarded bytes: they must parse back to the very same head, or the
    // origin would see a different request from the one that was checked.
    const std::string wire = serialize_request_head(head);
    RequestHead again;
    const ParseResult a = parse_request_head(wire, roomy_limits, again);
    FUZZ_CHECK(a.status == ParseStatus::complete);
    FUZZ_CHECK(a.consumed == wire.size());
    FUZZ_CHECK(same_head(head, again));
    FUZZ_CHECK(serialize_request_head(again) == wire);
    FUZZ_CHECK(same_framing(framing, request_framing(again)));
    return 0;
}
