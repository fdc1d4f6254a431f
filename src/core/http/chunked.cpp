// Incremental, strict chunked-body decoding (RFC 9112 section 7.1).
//
// The decoder keeps only the current chunk-size or trailer line, and that line
// is capped by the limits, so memory stays bounded whatever the peer sends. It
// stops exactly after the last CRLF of the body: whatever follows in the caller's
// buffer is the next pipelined message and must not be touched.
#include "vaultgate/http/message.hpp"

#include "vaultgate/http/syntax.hpp"
#include "vaultgate/util/encoding.hpp"

#include <algorithm>
#include <limits>

namespace vaultgate {
namespace {

// Longest chunk-size line (digits plus extension) the limits allow.
std::size_t size_line_cap(const ChunkLimits& limits) {
    const std::size_t max = std::numeric_limits<std::size_t>::max();
    if (limits.max_chunk_size_digits > max - limits.max_extension_bytes) return max;
    return limits.max_chunk_size_digits + limits.max_extension_bytes;
}

// Parses "1*HEXDIG [ ';' extension ]" (without CRLF). Returns nullptr or a
// fixed reason. Also used on an over-long partial line, where it is bound to
// fail: either the digits or the extension are then past their cap.
const char* parse_size_line(std::string_view line, const ChunkLimits& limits, std::uint64_t& size) {
    std::uint64_t value = 0;
    std::size_t digits = 0;
    for (; digits < line.size(); ++digits) {
        const int d = hex_digit_value(line[digits]);
        if (d < 0) break;
        if (digits == limits.max_chunk_size_digits) return "chunk size has too many digits";
        if (value > (std::numeric_limits<std::uint64_t>::max() >> 4)) return "chunk size overflows";
        value = (value << 4) | static_cast<std::uint64_t>(d);
    }
    if (digits == 0) return "missing chunk size";
    const std::string_view ext = line.substr(digits);
    if (!ext.empty()) {
        // No BWS before ';' and no "0x": stricter than RFC 9112's grammar, but
        // nothing legitimate sends either, and they are known desync vectors.
        if (ext.front() != ';') return "invalid character after chunk size";
        if (ext.size() > limits.max_extension_bytes) return "chunk extension too long";
        // Extensions are dropped, never forwarded; only their bytes are checked.
        if (!syntax::all_of_class(ext, syntax::field_char)) return "invalid character in chunk extension";
    }
    size = value;
    return nullptr;
}

// Trailer fields that could change framing, routing or the connection if
// some later hop merged them into the head.
bool forbidden_trailer(std::string_view name) {
    return iequals(name, "content-length") || iequals(name, "transfer-encoding") || iequals(name, "host") ||
           is_hop_by_hop(name);
}

}  // namespace

ChunkedDecoder::Step ChunkedDecoder::fail(std::string reason, std::size_t consumed) {
    state_ = State::failed;
    error_ = std::move(reason);
    line_.clear();
    return {Status::error, consumed};
}

ChunkedDecoder::Step ChunkedDecoder::feed(std::string_view in, std::string& out) {
    if (state_ == State::done) return {Status::done, 0};
    if (state_ == State::failed) return {Status::error, 0};

    std::size_t pos = 0;
    while (pos < in.size()) {
        switch (state_) {
            case State::size:
            case State::trailer: {
                const bool is_size = state_ == State::size;
                const std::string_view rest = in.substr(pos);
                const std::size_t end = syntax::find_cr_or_lf(rest);
                const std::size_t take = end == syntax::npos ? rest.size() : end;
                // Room left for this line; the invariants keep both subtractions >= 0.
                const std::size_t room = is_size ? size_line_cap(limits_) - line_.size()
                                                 : limits_.max_trailer_bytes - trailer_bytes_ - line_.size();
                if (take > room) {
                    if (!is_size) return fail("trailer section too large", pos + room + 1);
                    // Keep one byte past the cap so the line parser names the problem.
                    line_.append(rest.data(), room + 1);
                    std::uint64_t ignored = 0;
                    const char* reason = parse_size_line(line_, limits_, ignored);
                    return fail(reason != nullptr ? reason : "chunk-size line too long", pos + room + 1);
                }
                line_.append(rest.data(), take);
                pos += take;
                if (end == syntax::npos) break;
                if (rest[end] == '\n') return fail(is_size ? "bare LF in chunk-size line" : "bare LF in trailer", pos);
                ++pos;  // the CR
                state_ = is_size ? State::size_lf : State::trailer_lf;
                break;
            }
            case State::size_lf: {
                if (in[pos] != '\n') return fail("CR without LF in chunk-size line", pos);
                ++pos;
                std::uint64_t size = 0;
                if (const char* reason = parse_size_line(line_, limits_, size)) return fail(reason, pos);
                line_.clear();
                if (size == 0) {
                    state_ = State::trailer;
                } else {
                    remaining_ = size;
                    state_ = State::data;
                }
                break;
            }
            case State::data: {
                const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size() - pos));
                out.append(in.data() + pos, n);
                pos += n;
                remaining_ -= n;
                if (remaining_ == 0) state_ = State::data_cr;
                break;
            }
            case State::data_cr:
                // A size that disagrees with the data is the heart of chunk smuggling.
                if (in[pos] != '\r') return fail("chunk data not followed by CRLF", pos);
                ++pos;
                state_ = State::data_lf;
                break;
            case State::data_lf:
                if (in[pos] != '\n') return fail("chunk data not followed by CRLF", pos);
                ++pos;
                state_ = State::size;
                break;
            case State::trailer_lf: {
                if (in[pos] != '\n') return fail("CR without LF in trailer", pos);
                ++pos;
                if (line_.empty()) {
                    state_ = State::done;
                    return {Status::done, pos};
                }
                trailer_bytes_ += line_.size() + 2;
                if (trailer_bytes_ > limits_.max_trailer_bytes) return fail("trailer section too large", pos);
                if (++trailer_count_ > limits_.max_trailer_count) return fail("too many trailer fields", pos);
                syntax::FieldLine field;
                if (const char* reason = syntax::parse_field_line(line_, field))
                    return fail(std::string("invalid trailer: ") + reason, pos);
                if (forbidden_trailer(field.name)) return fail("framing or hop-by-hop field in trailer", pos);
                // Other trailers are dropped: the re-framed body ends with an empty trailer.
                line_.clear();
                state_ = State::trailer;
                break;
            }
            case State::done:
            case State::failed:
                // Unreachable (both return as they are entered); returning keeps a
                // future slip from spinning here without consuming anything.
                return {state_ == State::done ? Status::done : Status::error, pos};
        }
    }
    return {Status::need_more, pos};
}

void append_chunk(std::string& out, std::string_view payload) {
    if (payload.empty()) return;  // an empty chunk would be the last-chunk
    static constexpr char digits[] = "0123456789abcdef";
    char size[16];
    std::size_t n = 0;
    for (std::size_t v = payload.size(); v != 0; v >>= 4) size[n++] = digits[v & 0xf];
    out.reserve(out.size() + n + payload.size() + 4);
    for (std::size_t i = n; i > 0; --i) out += size[i - 1];
    out += "\r\n";
    out.append(payload);
    out += "\r\n";
}

}  // namespace vaultgate
