// Fuzzes the chunked-body decoder. It is fed by whatever each socket read
// returns, so its verdict must not depend on where the reads happen to split
// the body: the same bytes whole, in two pieces, or one byte at a time must give
// the same status, payload, consumed count and error.
#include "fuzz_check.hpp"

#include "vaultgate/http/message.hpp"

#include <string>
#include <string_view>

using namespace vaultgate;
using vaultgate::fuzz::as_view;
using vaultgate::fuzz::is_plain_reason;

namespace {

// Small, so that short inputs reach every limit.
constexpr ChunkLimits small_limits{4, 16, 64, 4};

struct Outcome {
    ChunkedDecoder::Status status = ChunkedDecoder::Status::need_more;
    std::string payload;
    std::size_t consumed = 0;
    std::string error;

    bool operator==(const Outcome&) const = default;
};

// Feeds `in` in pieces of at most `piece` bytes (0: one piece), stopping at the
// first piece that ends the body or fails, as a caller would.
Outcome decode(std::string_view in, std::size_t first_piece, std::size_t piece, const ChunkLimits& limits) {
    ChunkedDecoder d(limits);
    Outcome o;
    std::size_t pos = 0;
    bool first = true;
    do {
        std::size_t n = first ? first_piece : piece;
        first = false;
        if (n == 0 || n > in.size() - pos) n = in.size() - pos;
        const std::string_view part = in.substr(pos, n);
        const std::size_t before = o.payload.size();
        const ChunkedDecoder::Step step = d.feed(part, o.payload);
        FUZZ_CHECK(step.consumed <= part.size());
        // Payload bytes are input bytes: the decoder never makes any up.
        FUZZ_CHECK(o.payload.size() - before <= step.consumed);
        // need_more means "give me more", so all of this piece was taken.
        if (step.status == ChunkedDecoder::Status::need_more) FUZZ_CHECK(step.consumed == part.size());
        o.status = step.status;
        o.consumed += step.consumed;
        pos += n;
        if (step.status != ChunkedDecoder::Status::need_more) break;
    } while (pos < in.size());

    FUZZ_CHECK(d.done() == (o.status == ChunkedDecoder::Status::done));
    if (o.status == ChunkedDecoder::Status::error) {
        o.error = d.error();
        FUZZ_CHECK(is_plain_reason(o.error));
    }
    // A finished decoder stays finished and takes nothing more: the bytes after
    // the body belong to the next message.
    if (o.status != ChunkedDecoder::Status::need_more) {
        std::string more;
        const ChunkedDecoder::Step after = d.feed("0\r\n\r\n", more);
        FUZZ_CHECK(after.status == o.status && after.consumed == 0 && more.empty());
    }
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in = as_view(data, size);

    const Outcome whole = decode(in, 0, 0, small_limits);

    // A split point that depends on the data, so the fuzzer can move it
    // without giving up any input bytes to choose it.
    std::size_t mix = 0;
    for (unsigned char c : in) mix = mix * 31 + c;
    const std::size_t split = size == 0 ? 0 : mix % (size + 1);
    // first_piece 0 would mean "all of it"; a split at 0 is the same as whole.
    const Outcome halves = decode(in, split == 0 ? size : split, 0, small_limits);
    const Outcome bytewise = decode(in, 1, 1, small_limits);

    FUZZ_CHECK(halves == whole);
    FUZZ_CHECK(bytewise == whole);

    // Limits only ever refuse; they never change what an accepted body decodes to.
    const Outcome roomy = decode(in, 0, 0, ChunkLimits{});
    if (whole.status != ChunkedDecoder::Status::error) FUZZ_CHECK(roomy == whole);

    if (whole.status == ChunkedDecoder::Status::done) {
        // The body is the last-chunk's CRLF away from the end of what was consumed.
        FUZZ_CHECK(whole.consumed >= 5 && in.substr(whole.consumed - 2, 2) == "\r\n");
        // Re-framing the payload, as the proxy does when it forwards, decodes
        // back to the same payload.
        std::string framed;
        append_chunk(framed, whole.payload);
        framed += last_chunk;
        const Outcome back = decode(framed, 0, 0, ChunkLimits{});
        FUZZ_CHECK(back.status == ChunkedDecoder::Status::done);
        FUZZ_CHECK(back.payload == whole.payload && back.consumed == framed.size());
    }
    return 0;
}
