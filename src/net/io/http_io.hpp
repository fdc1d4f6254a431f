#pragma once
// Reading message heads and moving bodies between streams, with the limits and
// timeouts of one connection. Templates over the stream type: plain TCP for
// absolute-form HTTP, TLS for the MITM path and upstreams.
#include "net/io/types.hpp"
#include "net/io/watchdog.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/mem/read_buffer.hpp"

#include <concepts>
#include <cstring>
#include <optional>
#include <string>

namespace vaultgate::net {

enum class HeadOutcome {
    ok,
    closed_clean,  // peer closed before sending any byte of a new head
    closed_early,  // peer closed in the middle of a head
    timed_out,
    io_error,
    invalid,  // see ParseResult for status and reason
};

struct HeadTimeouts {
    clock::duration first_byte;  // idle wait before a head starts
    clock::duration complete;    // from the first byte to the end of the head
};

// Streams that can try a read or write without waiting (TlsSocket) do, and
// only wait asynchronously when that would block; the others (plain TCP, whose
// Asio operations try at once themselves) go straight to the async operation.
template <class Stream>
concept TriesFirst = requires(Stream& s, char* p, std::size_t n, error_code& ec) {
    { s.try_read_some(p, n, ec) } -> std::same_as<std::size_t>;
    { s.try_write_some(p, n, ec) } -> std::same_as<std::size_t>;
    { s.try_flush(ec) } -> std::same_as<bool>;
};

template <class Stream>
awaitable<std::pair<error_code, std::size_t>> read_some(Stream& stream, char* space, std::size_t len) {
    if constexpr (TriesFirst<Stream>) {
        // A stream with data always ready (a long download) would never give
        // the other connections of this thread a turn; every so often, a read
        // that could complete at once lets the queue run first.
        thread_local unsigned immediate_reads = 0;
        if (++immediate_reads % 16 == 0) co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        error_code ec;
        std::size_t n = stream.try_read_some(space, len, ec);
        if (ec != asio::error::would_block) co_return std::pair(ec, n);
        auto [aec, an] = co_await stream.async_read_some_after_would_block(asio::buffer(space, len), use_tuple);
        co_return std::pair(aec, an);
    } else {
        auto [ec, n] = co_await stream.async_read_some(asio::buffer(space, len), use_tuple);
        co_return std::pair(ec, n);
    }
}

// Reads until `parse` completes a head from `buf`. The head's bytes are consumed;
// whatever follows stays in buf.
template <class Stream, class Head, class ParseFn>
awaitable<HeadOutcome> read_head(Stream& stream, ReadBuffer& buf, Head& head, ParseFn parse, const HeadLimits& limits,
                                 Watchdog& watchdog, HeadTimeouts timeouts, ParseResult& result) {
    bool started = !buf.empty();
    bool parse_now = started;
    watchdog.arm(started ? timeouts.complete : timeouts.first_byte);
    // Parsing starts over on the whole buffer, so it runs only when a read
    // brought a line end, or once the buffer is past the request-line limit
    // (which the parser must see to refuse). A slow sender cannot make it quadratic.
    const std::size_t parse_anyway = std::min(limits.max_request_line, limits.max_head_bytes);
    for (;;) {
        if (parse_now) {
            result = parse(buf.view(), limits, head);
            if (result.status == ParseStatus::complete) {
                buf.consume(result.consumed);
                co_return HeadOutcome::ok;
            }
            if (result.status == ParseStatus::error) co_return HeadOutcome::invalid;
        }
        std::size_t len = 0;
        char* space = buf.prepare(len);
        auto [ec, n] = co_await read_some(stream, space, len);
        buf.commit(n);
        parse_now = n > 0 && (std::memchr(space, '\n', n) != nullptr || buf.size() > parse_anyway);
        if (n > 0 && !started) {
            started = true;
            watchdog.arm(timeouts.complete);
        }
        if (ec) {
            if (watchdog.expired()) co_return HeadOutcome::timed_out;
            if (n > 0) continue;  // parse what arrived with the error first
            if (!started) co_return HeadOutcome::closed_clean;
            co_return (ec == asio::error::eof || ec == ssl::error::stream_truncated) ? HeadOutcome::closed_early
                                                                                     : HeadOutcome::io_error;
        }
    }
}

template <class Stream>
awaitable<error_code> write_all(Stream& stream, std::string_view data, Watchdog& watchdog, clock::duration timeout) {
    if constexpr (TriesFirst<Stream>) {
        while (!data.empty()) {
            error_code ec;
            std::size_t n = stream.try_write_some(data.data(), data.size(), ec);
            if (ec == asio::error::would_block) break;
            if (ec) co_return ec;
            data.remove_prefix(n);
        }
        if (data.empty()) {
            error_code flush_error;
            if (stream.try_flush(flush_error)) co_return error_code{};
            if (flush_error != asio::error::would_block) co_return flush_error;
            watchdog.arm(timeout);
            auto [ec, n] = co_await stream.async_flush(use_tuple);
            co_return ec;
        }
    }
    watchdog.arm(timeout);
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(data.data(), data.size()), use_tuple);
    co_return ec;
}

enum class BodyOutcome {
    ok,
    source_closed,  // the sender closed before the body ended
    source_error,
    sink_error,
    timed_out,
    invalid,  // chunked framing error (reason in error)
};

struct BodyResult {
    BodyOutcome outcome = BodyOutcome::ok;
    std::uint64_t bytes = 0;  // payload bytes moved
    std::string error;
};

// One read into buf for a body. When it brings nothing, says why: the sender
// closed, failed, or the watchdog cut a stall.
template <class Stream>
awaitable<std::optional<BodyOutcome>> read_body_bytes(Stream& stream, ReadBuffer& buf, Watchdog& watchdog,
                                                      clock::duration idle) {
    watchdog.arm(idle);
    std::size_t len = 0;
    char* space = buf.prepare(len);
    auto [ec, n] = co_await read_some(stream, space, len);
    buf.commit(n);
    if (n > 0 || !ec) co_return std::nullopt;
    if (watchdog.expired()) co_return BodyOutcome::timed_out;
    if (ec == asio::error::eof || ec == ssl::error::stream_truncated) co_return BodyOutcome::source_closed;
    co_return BodyOutcome::source_error;
}

// Calls `sink(std::string_view payload)` -> awaitable<error_code> for each piece of
// the body of length `length`, starting with what is already in buf.
template <class Stream, class Sink>
awaitable<BodyResult> read_fixed_body(Stream& stream, ReadBuffer& buf, std::uint64_t length, Watchdog& watchdog,
                                      clock::duration idle, Sink sink) {
    BodyResult r;
    std::uint64_t left = length;
    while (left > 0) {
        if (buf.empty()) {
            if (auto stop = co_await read_body_bytes(stream, buf, watchdog, idle)) {
                r.outcome = *stop;
                co_return r;
            }
        }
        auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
        if (auto ec = co_await sink(buf.view().substr(0, take))) {
            r.outcome = watchdog.expired() ? BodyOutcome::timed_out : BodyOutcome::sink_error;
            co_return r;
        }
        buf.consume(take);
        left -= take;
        r.bytes += take;
    }
    co_return r;
}

// Decodes a chunked body; `sink` gets decoded payload pieces. Stops at the end
// of the last chunk and its trailers, leaving any following bytes in buf.
template <class Stream, class Sink>
awaitable<BodyResult> read_chunked_body(Stream& stream, ReadBuffer& buf, const ChunkLimits& limits, Watchdog& watchdog,
                                        clock::duration idle, Sink sink) {
    BodyResult r;
    ChunkedDecoder decoder(limits);
    std::string decoded;
    for (;;) {
        if (!buf.empty()) {
            decoded.clear();
            auto step = decoder.feed(buf.view(), decoded);
            buf.consume(step.consumed);
            if (step.status == ChunkedDecoder::Status::error) {
                r.outcome = BodyOutcome::invalid;
                r.error = decoder.error();
                co_return r;
            }
            if (!decoded.empty()) {
                r.bytes += decoded.size();
                if (auto ec = co_await sink(std::string_view(decoded))) {
                    r.outcome = watchdog.expired() ? BodyOutcome::timed_out : BodyOutcome::sink_error;
                    co_return r;
                }
            }
            if (step.status == ChunkedDecoder::Status::done) co_return r;
            if (!buf.empty()) continue;
        }
        if (auto stop = co_await read_body_bytes(stream, buf, watchdog, idle)) {
            r.outcome = *stop;
            co_return r;
        }
    }
}

// Reads until the sender closes (responses without framing).
template <class Stream, class Sink>
awaitable<BodyResult> read_until_close(Stream& stream, ReadBuffer& buf, Watchdog& watchdog, clock::duration idle,
                                       Sink sink) {
    BodyResult r;
    for (;;) {
        if (!buf.empty()) {
            auto piece = buf.view();
            if (auto ec = co_await sink(piece)) {
                r.outcome = watchdog.expired() ? BodyOutcome::timed_out : BodyOutcome::sink_error;
                co_return r;
            }
            r.bytes += piece.size();
            buf.consume(piece.size());
        }
        if (auto stop = co_await read_body_bytes(stream, buf, watchdog, idle)) {
            // For an unframed body the close is the end; a truncated TLS close is
            // what many servers send, so it counts as the end too.
            if (*stop != BodyOutcome::source_closed) r.outcome = *stop;
            co_return r;
        }
    }
}

}  // namespace vaultgate::net
