// Incremental chunked decoding: strict syntax, limits, and identical results
// however the input is split across reads.
#include "vaultgate/http/message.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace std::string_literals;

namespace vaultgate {
namespace {

using Status = ChunkedDecoder::Status;

struct Decoded {
    Status status = Status::need_more;
    std::string payload;
    std::size_t consumed = 0;
    std::string error;
};

// Feeds `in` cut at the given offsets (ascending). Each piece is a fresh copy
// so that ASan catches a read past its end.
Decoded decode_pieces(std::string_view in, const std::vector<std::size_t>& cuts, const ChunkLimits& limits = {}) {
    ChunkedDecoder decoder(limits);
    Decoded d;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : in.size();
        const std::string piece(in.substr(from, to - from));
        const ChunkedDecoder::Step step = decoder.feed(piece, d.payload);
        EXPECT_LE(step.consumed, piece.size());
        d.consumed += step.consumed;
        d.status = step.status;
        if (step.status != Status::need_more) {
            if (step.status == Status::done) {
                EXPECT_TRUE(decoder.done());
            } else {
                d.error = decoder.error();
                // A failed decoder stays failed.
                EXPECT_EQ(decoder.feed("0\r\n\r\n", d.payload).status, Status::error);
            }
            break;
        }
        EXPECT_EQ(step.consumed, piece.size()) << "need_more consumes everything";
        from = to;
    }
    return d;
}

Decoded decode_whole(std::string_view in, const ChunkLimits& limits = {}) { return decode_pieces(in, {}, limits); }

Decoded decode_bytewise(std::string_view in, const ChunkLimits& limits = {}) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < in.size(); ++i) cuts.push_back(i);
    return decode_pieces(in, cuts, limits);
}

void expect_same(const Decoded& a, const Decoded& b) {
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.payload, b.payload);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a.consumed, b.consumed);
}

// Whole, byte by byte, every two-piece split, and a sample of three-piece splits.
void expect_split_invariant(std::string_view in, const Decoded& whole, const ChunkLimits& limits = {}) {
    {
        SCOPED_TRACE("bytewise");
        expect_same(decode_bytewise(in, limits), whole);
    }
    for (std::size_t cut = 0; cut <= in.size(); ++cut) {
        SCOPED_TRACE("split at " + std::to_string(cut));
        expect_same(decode_pieces(in, {cut}, limits), whole);
    }
    for (std::size_t a = 0; a <= in.size(); a += 3)
        for (std::size_t b = a; b <= in.size(); b += 5) {
            SCOPED_TRACE("split at " + std::to_string(a) + "," + std::to_string(b));
            expect_same(decode_pieces(in, {a, b}, limits), whole);
        }
}

struct ValidBody {
    const char* name;
    std::string input;  // the body, possibly followed by the next message
    std::string payload;
    std::size_t body_length;
};

const std::vector<ValidBody>& valid_bodies() {
    static const std::vector<ValidBody> rows = {
        {"empty body", "0\r\n\r\n", "", 5},
        {"one chunk", "5\r\nhello\r\n0\r\n\r\n", "hello", 15},
        {"several chunks", "3\r\nabc\r\n2\r\nde\r\n1\r\nf\r\n0\r\n\r\n", "abcdef", 26},
        {"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 20},
        {"lower-case hex", "a\r\n0123456789\r\n0\r\n\r\n", "0123456789", 20},
        {"leading zeros", "0005\r\nhello\r\n0000\r\n\r\n", "hello", 21},
        {"16 digits", "0000000000000005\r\nhello\r\n0\r\n\r\n", "hello", 30},
        {"extensions", "5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello", 31},
        {"extension quoted with space and tab", "5;a=\"b c\"\t;d\r\nhello\r\n0\r\n\r\n", "hello", 26},
        {"bare semicolon extension", "5;\r\nhello\r\n0\r\n\r\n", "hello", 16},
        {"trailers dropped", "5\r\nhello\r\n0\r\nX-Checksum: abc\r\nx-other:\r\n\r\n", "hello", 42},
        {"trailer value trimmed and with obs-text", "0\r\nX-T:  \xc3\xa9 \r\n\r\n", "", 16},
        {"payload looks like a last chunk", "6\r\n0\r\n\r\nx\r\n0\r\n\r\n", "0\r\n\r\nx", 16},
        {"binary payload", "4\r\n\0\r\n\xff\r\n0\r\n\r\n"s, "\0\r\n\xff"s, 14},
        {"pipelined request after body", "0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "", 5},
        {"pipelined garbage after body", "2\r\nhi\r\n0\r\n\r\n\n\r0\r\n\0zz"s, "hi", 12},
    };
    return rows;
}

TEST(ChunkedDecoder, DecodesValidBodies) {
    for (const ValidBody& row : valid_bodies()) {
        SCOPED_TRACE(row.name);
        const Decoded whole = decode_whole(row.input);
        ASSERT_EQ(whole.status, Status::done) << whole.error;
        EXPECT_EQ(whole.payload, row.payload);
        EXPECT_EQ(whole.consumed, row.body_length) << "stops exactly at the end of the body";
    }
}

TEST(ChunkedDecoder, ValidBodiesDecodeTheSameAtEverySplit) {
    for (const ValidBody& row : valid_bodies()) {
        SCOPED_TRACE(row.name);
        expect_split_invariant(row.input, decode_whole(row.input));
    }
}

TEST(ChunkedDecoder, EveryStrictPrefixNeedsMore) {
    for (const ValidBody& row : valid_bodies()) {
        SCOPED_TRACE(row.name);
        for (std::size_t n = 0; n < row.body_length; ++n) {
            const Decoded d = decode_whole(std::string_view(row.input).substr(0, n));
            ASSERT_EQ(d.status, Status::need_more) << "prefix " << n << ": " << d.error;
            EXPECT_EQ(d.consumed, n);
        }
    }
}

TEST(ChunkedDecoder, FeedAfterDoneConsumesNothing) {
    ChunkedDecoder decoder;
    std::string out;
    const auto step = decoder.feed("1\r\na\r\n0\r\n\r\nNEXT", out);
    EXPECT_EQ(step.status, Status::done);
    EXPECT_EQ(step.consumed, 11u);
    const auto again = decoder.feed("1\r\nb\r\n0\r\n\r\n", out);
    EXPECT_EQ(again.status, Status::done);
    EXPECT_EQ(again.consumed, 0u);
    EXPECT_EQ(out, "a");
}

TEST(ChunkedDecoder, EmptyFeedNeedsMore) {
    ChunkedDecoder decoder;
    std::string out;
    const auto step = decoder.feed({}, out);
    EXPECT_EQ(step.status, Status::need_more);
    EXPECT_EQ(step.consumed, 0u);
}

struct RejectedBody {
    const char* name;
    std::string input;
};

std::vector<RejectedBody> rejected_bodies() {
    return {
        // Chunk-size line.
        {"0x prefix", "0x5\r\nhello\r\n0\r\n\r\n"},
        {"negative", "-1\r\nx\r\n0\r\n\r\n"},
        {"plus sign", "+5\r\nhello\r\n0\r\n\r\n"},
        {"leading space", " 5\r\nhello\r\n0\r\n\r\n"},
        {"space before CRLF", "5 \r\nhello\r\n0\r\n\r\n"},
        {"space before extension", "5 ;a\r\nhello\r\n0\r\n\r\n"},
        {"tab before CRLF", "5\t\r\nhello\r\n0\r\n\r\n"},
        {"missing size", "\r\nhello\r\n0\r\n\r\n"},
        {"extension only", ";a\r\nhello\r\n0\r\n\r\n"},
        {"non-hex digit", "5g\r\nhello\r\n0\r\n\r\n"},
        {"bare LF after size", "5\nhello\r\n0\r\n\r\n"},
        {"bare LF after last size", "5\r\nhello\r\n0\n\r\n"},
        {"bare CR after size", "5\rhello\r\n0\r\n\r\n"},
        {"CR CR LF after size", "5\r\r\nhello\r\n0\r\n\r\n"},
        {"17 digits", "00000000000000005\r\nhello\r\n0\r\n\r\n"},
        {"17 digit value", "10000000000000000\r\nx\r\n"},
        {"huge hex", "ffffffffffffffffffffffffffffffff\r\nx\r\n"},
        {"NUL in extension", "5;a\0b\r\nhello\r\n0\r\n\r\n"s},
        {"control in extension", "5;a\x01\r\nhello\r\n0\r\n\r\n"},
        {"DEL in extension", "5;a\x7f\r\nhello\r\n0\r\n\r\n"},
        {"extension too long", "5;" + std::string(1024, 'a') + "\r\nhello\r\n0\r\n\r\n"},
        // Chunk data.
        {"data followed by LF", "5\r\nhello\n0\r\n\r\n"},
        {"data followed by nothing like CRLF", "5\r\nhelloX\r\n0\r\n\r\n"},
        {"data followed by CR and junk", "5\r\nhello\r0\r\n\r\n"},
        {"size smaller than data", "3\r\nhello\r\n0\r\n\r\n"},
        {"size larger than data", "6\r\nhello\r\n0\r\n\r\n\r\n"},
        // Trailer section.
        {"trailer content-length", "0\r\nContent-Length: 5\r\n\r\n"},
        {"trailer transfer-encoding", "0\r\ntransfer-encoding: chunked\r\n\r\n"},
        {"trailer host", "0\r\nHost: evil.example\r\n\r\n"},
        {"trailer connection", "0\r\nConnection: close\r\n\r\n"},
        {"trailer trailer", "0\r\nTrailer: X\r\n\r\n"},
        {"trailer te", "0\r\nTE: trailers\r\n\r\n"},
        {"trailer upgrade", "0\r\nUpgrade: h2c\r\n\r\n"},
        {"trailer keep-alive", "0\r\nKeep-Alive: 5\r\n\r\n"},
        {"trailer proxy-authorization", "0\r\nProxy-Authorization: Basic x\r\n\r\n"},
        {"trailer obs-fold", "0\r\nX: a\r\n b\r\n\r\n"},
        {"trailer without colon", "0\r\nfoo\r\n\r\n"},
        {"trailer space before colon", "0\r\nX : a\r\n\r\n"},
        {"trailer bad name", "0\r\nX@Y: a\r\n\r\n"},
        {"trailer NUL", "0\r\nX: a\0\r\n\r\n"s},
        {"trailer bare CR", "0\r\nX: a\rb\r\n\r\n"},
        {"trailer bare LF", "0\r\nX: a\n\r\n"},
        {"final bare LF", "0\r\n\n"},
        {"final CR without LF", "0\r\n\r\r"},
    };
}

TEST(ChunkedDecoder, RejectsMalformedBodies) {
    for (const RejectedBody& row : rejected_bodies()) {
        SCOPED_TRACE(row.name);
        const Decoded whole = decode_whole(row.input);
        EXPECT_EQ(whole.status, Status::error);
        EXPECT_FALSE(whole.error.empty());
    }
}

TEST(ChunkedDecoder, RejectionsAreTheSameAtEverySplit) {
    for (const RejectedBody& row : rejected_bodies()) {
        SCOPED_TRACE(row.name);
        expect_split_invariant(row.input, decode_whole(row.input));
    }
}

TEST(ChunkedDecoder, ReasonsNameTheProblem) {
    EXPECT_EQ(decode_whole("0\r\nContent-Length: 5\r\n\r\n").error, "framing or hop-by-hop field in trailer");
    EXPECT_EQ(decode_whole("00000000000000005\r\n").error, "chunk size has too many digits");
    EXPECT_EQ(decode_whole("5;" + std::string(1024, 'a') + "\r\n").error, "chunk extension too long");
    EXPECT_EQ(decode_whole("5\r\nhelloX").error, "chunk data not followed by CRLF");
    EXPECT_EQ(decode_whole("5\n").error, "bare LF in chunk-size line");
}

TEST(ChunkedDecoder, ChunkSizeDigitLimit) {
    ChunkLimits limits;
    limits.max_chunk_size_digits = 4;
    EXPECT_EQ(decode_whole("0005\r\nhello\r\n0\r\n\r\n", limits).status, Status::done);
    EXPECT_EQ(decode_whole("00005\r\nhello\r\n0\r\n\r\n", limits).status, Status::error);
    // Refused before the line ends: the cap also bounds what the decoder buffers.
    EXPECT_EQ(decode_whole(std::string(100000, '0'), limits).status, Status::error);
}

TEST(ChunkedDecoder, ChunkSizeOverflowWithAWiderDigitCap) {
    ChunkLimits limits;
    limits.max_chunk_size_digits = 32;
    EXPECT_EQ(decode_whole("0000000000000000000000000000001\r\nx\r\n0\r\n\r\n", limits).status, Status::done);
    const Decoded d = decode_whole("10000000000000000\r\nx\r\n", limits);
    EXPECT_EQ(d.status, Status::error);
    EXPECT_EQ(d.error, "chunk size overflows");
}

TEST(ChunkedDecoder, LargestChunkSizeNeedsMoreWithoutOverflow) {
    std::string in = "ffffffffffffffff\r\n" + std::string(1000, 'x');
    const Decoded d = decode_whole(in);
    EXPECT_EQ(d.status, Status::need_more);
    EXPECT_EQ(d.payload.size(), 1000u);
}

TEST(ChunkedDecoder, ExtensionLimit) {
    ChunkLimits limits;
    limits.max_extension_bytes = 8;
    // The limit counts the extension from its ';'.
    EXPECT_EQ(decode_whole("5;abcdefg\r\nhello\r\n0\r\n\r\n", limits).status, Status::done);
    EXPECT_EQ(decode_whole("5;abcdefgh\r\nhello\r\n0\r\n\r\n", limits).status, Status::error);
    EXPECT_EQ(decode_whole("5;" + std::string(100000, 'a'), limits).status, Status::error);
    EXPECT_EQ(decode_whole("5;" + std::string(1024, 'a') + "\r\nhello\r\n0\r\n\r\n").status, Status::error);
    EXPECT_EQ(decode_whole("5;" + std::string(1023, 'a') + "\r\nhello\r\n0\r\n\r\n").status, Status::done);
}

TEST(ChunkedDecoder, TrailerCountLimit) {
    ChunkLimits limits;
    limits.max_trailer_count = 3;
    const auto body_with = [](int trailers) {
        std::string s = "0\r\n";
        for (int i = 0; i < trailers; ++i) s += "X-" + std::to_string(i) + ": v\r\n";
        return s + "\r\n";
    };
    EXPECT_EQ(decode_whole(body_with(3), limits).status, Status::done);
    const std::string over = body_with(4);
    const Decoded d = decode_whole(over, limits);
    EXPECT_EQ(d.status, Status::error);
    EXPECT_EQ(d.error, "too many trailer fields");
    expect_split_invariant(over, d, limits);
}

TEST(ChunkedDecoder, TrailerByteLimit) {
    ChunkLimits limits;
    limits.max_trailer_bytes = 20;
    // "X: " + 15 bytes + CRLF = 20 bytes.
    EXPECT_EQ(decode_whole("0\r\nX: " + std::string(15, 'v') + "\r\n\r\n", limits).status, Status::done);
    EXPECT_EQ(decode_whole("0\r\nX: " + std::string(16, 'v') + "\r\n\r\n", limits).status, Status::error);
    EXPECT_EQ(decode_whole("0\r\nA: 1234567\r\nB: 12345678\r\n\r\n", limits).status, Status::error);
    const std::string endless = "0\r\nX: " + std::string(100000, 'v');
    const Decoded d = decode_whole(endless, limits);
    EXPECT_EQ(d.status, Status::error);
    EXPECT_EQ(d.error, "trailer section too large");
    expect_split_invariant("0\r\nX: " + std::string(30, 'v') + "\r\n\r\n",
                           decode_whole("0\r\nX: " + std::string(30, 'v') + "\r\n\r\n", limits), limits);
}

TEST(ChunkedDecoder, AppendChunkFraming) {
    std::string out;
    append_chunk(out, "");
    EXPECT_EQ(out, "") << "an empty chunk would end the body";
    append_chunk(out, "hello");
    EXPECT_EQ(out, "5\r\nhello\r\n");
    out.clear();
    append_chunk(out, std::string(255, 'x'));
    EXPECT_EQ(out.substr(0, 4), "ff\r\n");
    EXPECT_EQ(out.size(), 4 + 255 + 2u);
    out.clear();
    append_chunk(out, std::string(4096, 'y'));
    EXPECT_EQ(out.substr(0, 5), "1000\r");
    EXPECT_EQ(last_chunk, "0\r\n\r\n");
}

// Re-framed output must decode back to the same payload whatever the reads.
TEST(ChunkedDecoder, AppendChunkRoundTripsAtRandomSplits) {
    std::mt19937 rng(42);
    for (int iter = 0; iter < 300; ++iter) {
        std::string wire, payload;
        const int chunks = static_cast<int>(rng() % 5);
        for (int c = 0; c < chunks; ++c) {
            std::string part(rng() % 300, '\0');
            for (char& ch : part) ch = static_cast<char>(rng());
            append_chunk(wire, part);
            payload += part;
        }
        wire += last_chunk;
        const std::size_t body = wire.size();
        wire += "HTTP/1.1 200 OK\r\n";
        std::vector<std::size_t> cuts;
        for (std::size_t at = 0; at < wire.size(); at += 1 + rng() % 40) cuts.push_back(at);
        const Decoded d = decode_pieces(wire, cuts);
        ASSERT_EQ(d.status, Status::done) << d.error;
        EXPECT_EQ(d.payload, payload);
        EXPECT_EQ(d.consumed, body);
    }
}

// Random bytes over the alphabet that matters: whatever the outcome, it must
// not depend on how the input was split, and must stay within the input.
TEST(ChunkedDecoder, RandomInputIsSplitInvariant) {
    std::mt19937 rng(7);
    const std::string alphabet = "0123456789abcdefABX;=: \t\r\n\r\n\r\n\0\x7f"s;
    ChunkLimits limits;
    limits.max_chunk_size_digits = 3;
    limits.max_extension_bytes = 6;
    limits.max_trailer_bytes = 24;
    limits.max_trailer_count = 2;
    const auto random_body = [&] {
        // Mostly well-formed, so that the mutations land deep in the grammar.
        std::string s;
        for (int c = static_cast<int>(rng() % 3); c > 0; --c) {
            const std::size_t n = 1 + rng() % 9;
            s += std::string(rng() % 2, '0') + "0123456789"[n];
            if (rng() % 3 == 0) s += ";e=" + std::string(rng() % 4, 'v');
            s += "\r\n" + std::string(n, 'd') + "\r\n";
        }
        s += "0\r\n";
        for (int t = static_cast<int>(rng() % 3); t > 0; --t) s += "X" + std::to_string(t) + ": " + "vvvv" + "\r\n";
        s += "\r\n";
        for (int m = static_cast<int>(rng() % 3); m > 0; --m) {
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
        return s;
    };
    int done = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        std::string in;
        if (iter % 2 == 0) {
            in = random_body();
        } else {
            in.assign(rng() % 48, '\0');
            for (char& c : in) c = alphabet[rng() % alphabet.size()];
        }
        const Decoded whole = decode_whole(in, limits);
        done += whole.status == Status::done;
        EXPECT_LE(whole.consumed, in.size());
        std::vector<std::size_t> cuts;
        for (std::size_t at = 0; at < in.size(); at += 1 + rng() % 6) cuts.push_back(at);
        const Decoded split = decode_pieces(in, cuts, limits);
        expect_same(split, whole);
        if (::testing::Test::HasFailure()) {
            ADD_FAILURE() << "input: " << ::testing::PrintToString(in);
            return;
        }
    }
    EXPECT_GT(done, 300) << "the generator should reach the end of many bodies";
}

}  // namespace
}  // namespace vaultgate
