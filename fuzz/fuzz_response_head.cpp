// Fuzzes the response-head parser and response framing: what an upstream
// sends decides where its body ends, and the proxy must agree with the client
// on that or the next response on the connection is someone else's.
#include "fuzz_check.hpp"

#include "vaultgate/http/message.hpp"

#include <string>
#include <string_view>

using namespace vaultgate;
using vaultgate::fuzz::as_view;
using vaultgate::fuzz::is_plain_reason;

namespace {

constexpr HeadLimits small_limits{512, 8, 128};
constexpr HeadLimits roomy_limits{1 << 20, 1 << 16, 1 << 20};

bool has_byte(std::string_view s, std::string_view bytes) { return s.find_first_of(bytes) != std::string_view::npos; }

void check_clean(const ResponseHead& head) {
    using namespace std::string_view_literals;
    const std::string_view breaks = "\r\n\0"sv;
    FUZZ_CHECK(head.version_minor == 0 || head.version_minor == 1);
    FUZZ_CHECK(head.status >= 100 && head.status <= 999);
    FUZZ_CHECK(!has_byte(head.reason, breaks));
    for (const Header& h : head.headers) {
        FUZZ_CHECK(!h.name.empty() && !has_byte(h.name, breaks) && !has_byte(h.name, " \t:"));
        FUZZ_CHECK(!has_byte(h.value, breaks));
    }
}

bool same_head(const ResponseHead& a, const ResponseHead& b) {
    if (a.version_minor != b.version_minor || a.status != b.status || a.reason != b.reason) return false;
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

void check_framing(const ResponseHead& head, std::string_view method, const FramingResult& f) {
    const std::size_t te = head.count("transfer-encoding");
    const std::size_t cl = head.count("content-length");
    const bool bodiless = method == "HEAD" || head.status < 200 || head.status == 204 || head.status == 304;
    if (!f.framing) {
        FUZZ_CHECK(is_plain_reason(f.reason));
        // Framing is only refused for responses that can have a body at all.
        FUZZ_CHECK(!bodiless);
        FUZZ_CHECK(te > 0 || cl > 0);
        return;
    }
    if (bodiless) {
        FUZZ_CHECK(f.framing->kind == BodyKind::none);
        return;
    }
    switch (f.framing->kind) {
        case BodyKind::chunked:
            FUZZ_CHECK(te == 1 && cl == 0 && head.version_minor == 1);
            FUZZ_CHECK(iequals(*head.get("transfer-encoding"), "chunked"));
            break;
        case BodyKind::content_length:
            FUZZ_CHECK(te == 0 && cl >= 1);
            break;
        case BodyKind::until_close:
            FUZZ_CHECK(te == 0 && cl == 0);
            break;
        case BodyKind::none:
            // Only the bodiless cases above frame as none for GET/HEAD.
            FUZZ_CHECK(false);
            break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in = as_view(data, size);

    ResponseHead head;
    const ParseResult r = parse_response_head(in, small_limits, head);
    ResponseHead roomy;
    const ParseResult rr = parse_response_head(in, roomy_limits, roomy);

    if (r.status == ParseStatus::error) FUZZ_CHECK(is_plain_reason(r.reason) && r.http_status >= 400);
    if (rr.status == ParseStatus::error) {
        FUZZ_CHECK(is_plain_reason(rr.reason) && rr.http_status >= 400);
        FUZZ_CHECK(r.status == ParseStatus::error);
    }
    if (r.status == ParseStatus::incomplete) FUZZ_CHECK(rr.status == ParseStatus::incomplete);
    if (r.status != ParseStatus::complete) return 0;

    FUZZ_CHECK(rr.status == ParseStatus::complete && rr.consumed == r.consumed && same_head(head, roomy));
    FUZZ_CHECK(r.consumed >= 4 && r.consumed <= size && r.consumed <= small_limits.max_head_bytes);
    FUZZ_CHECK(in.substr(r.consumed - 4, 4) == "\r\n\r\n");
    FUZZ_CHECK(head.headers.size() <= small_limits.max_header_count);
    check_clean(head);

    for (const std::size_t cut : {r.consumed - 1, r.consumed / 2, std::size_t{1}}) {
        ResponseHead partial;
        FUZZ_CHECK(parse_response_head(in.substr(0, cut), small_limits, partial).status == ParseStatus::incomplete);
    }

    const FramingResult get = response_framing(head, "GET");
    const FramingResult head_req = response_framing(head, "HEAD");
    check_framing(head, "GET", get);
    check_framing(head, "HEAD", head_req);

    // The head the client receives is re-serialised from these fields.
    const std::string wire = serialize_response_head(head);
    ResponseHead again;
    const ParseResult a = parse_response_head(wire, roomy_limits, again);
    FUZZ_CHECK(a.status == ParseStatus::complete && a.consumed == wire.size());
    FUZZ_CHECK(same_head(head, again));
    FUZZ_CHECK(serialize_response_head(again) == wire);
    FUZZ_CHECK(same_framing(get, response_framing(again, "GET")));
    FUZZ_CHECK(same_framing(head_req, response_framing(again, "HEAD")));
    return 0;
}
