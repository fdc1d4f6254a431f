#pragma once
// The client's two parts in an exchange with an HTTP/2 origin
// (h2_exchange.hpp), one of each for either client wire: where the request
// body comes from, and where the response goes.
//
// Trailers: an HTTP/2 client's request trailers go to the origin; an
// HTTP/1.1 client's are dropped (as the SPEC has it for HTTP/1.1 origins).
// The origin's response trailers reach an HTTP/2 client as trailers, and an
// HTTP/1.1 client as the trailer section of a chunked body; a body sent with
// Content-Length, or to an HTTP/1.0 client, carries none.
#include "net/forward/exchange.hpp"
#include "net/forward/h2_exchange.hpp"
#include "net/h2/h1_translation.hpp"
#include "net/h2/h2_stream.hpp"

#include <optional>

namespace vaultgate::net {

// The body of an HTTP/1.1 client's request (Content-Length or chunked).
template <class Client, class Upstream>
struct H1ClientBody {
    ExchangeIo<Client, Upstream>& io;
    const RequestPlan& plan;

    // (No co_return co_await, nor a temporary result: GCC 12 miscompiles both here.)
    awaitable<BodyResult> operator()(OriginSink sink) {
        BodyResult r;
        if (plan.expect_continue) {
            const error_code ec = co_await write_all(io.client, std::string_view("HTTP/1.1 100 Continue\r\n\r\n"),
                                                     io.watchdog, io.limits.idle_timeout);
            if (ec) {
                r.outcome = BodyOutcome::source_error;
                co_return r;
            }
        }
        if (plan.framing.kind == BodyKind::chunked)
            r = co_await read_chunked_body(io.client, io.client_buf, ChunkLimits{}, io.watchdog, io.limits.idle_timeout,
                                           sink);
        else
            r = co_await read_fixed_body(io.client, io.client_buf, plan.framing.length, io.watchdog,
                                         io.limits.idle_timeout, sink);
        co_return r;
    }
    std::vector<Header> trailers() { return {}; }
};

// The body of an HTTP/2 client's stream, and its trailers.
struct H2ClientBody {
    h2::H2Stream& stream;
    bool expect_continue;
    clock::duration idle;

    awaitable<BodyResult> operator()(OriginSink sink) {
        if (expect_continue) stream.send_continue();
        BodyResult r = co_await pump_h2_body(stream, idle, sink);
        co_return r;
    }
    std::vector<Header> trailers() {
        std::vector<Header> out;
        for (Header& h : stream.request_trailers())
            if (allowed_in_trailers(h.name)) out.push_back(std::move(h));
        return out;
    }
};

// The response to an HTTP/1.1 client: framed as exchange.hpp frames any
// response (shape_for_h1_client), the body through a BodyWriter.
template <class Client, class Upstream>
struct H1ClientResponse {
    ExchangeIo<Client, Upstream>& io;
    const RequestPlan& plan;
    bool draining;
    std::optional<BodyWriter<Client>> writer{};
    H1ClientShape shape{};

    bool gone() const { return false; }
    bool keep_client() const { return !shape.close_after; }
    void abort() {}  // keep_client() is not asked: the connection closes

    awaitable<bool> head(ResponseHead& resp, const BodyFraming& rf, const Redactor* redactor, bool body_is_here,
                         ExchangeResult& result) {
        shape = shape_for_h1_client(rf, plan, redactor != nullptr, draining);
        ResponseHead out = head_for_h1_client(std::move(resp), rf, shape);
        auto text = serialize_for_client(out, redactor);
        if (!text) {
            result.refusal = unredactable_response();
            co_return false;
        }
        writer.emplace(BodyWriter<Client>{&io.client, &io.watchdog, io.limits.idle_timeout, shape.rechunk,
                                          &io.write_buffer, std::move(*text)});
        // As exchange.hpp: the head waits for the body only when bytes of it are here.
        const bool empty = rf.kind == BodyKind::none || (rf.kind == BodyKind::content_length && rf.length == 0);
        if ((!(body_is_here || empty) || redactor) && co_await writer->send_head()) {
            result.reason = "client_gone";
            co_return false;
        }
        io.watchdog.disarm();
        co_return true;
    }
    // Each write leaves the watchdog disarmed: the waits for the origin's
    // DATA are timed by the stream, and a deadline left from a write must not
    // cut them short (the watchdog also watches the origin stream).
    awaitable<error_code> operator()(std::string_view piece) {
        const error_code ec = co_await (*writer)(piece);
        io.watchdog.disarm();
        co_return ec;
    }
    awaitable<error_code> finish(std::vector<Header>&& trailers, const Redactor* redactor) {
        if (shape.rechunk && !trailers.empty()) {
            const std::vector<Header> fields = trailers_for_client(std::move(trailers), redactor);
            if (!fields.empty()) {
                std::string last = last_chunk_with(fields);
                const error_code ec = co_await writer->finish(last);
                wipe_string(last);
                co_return ec;
            }
        }
        const error_code ec = co_await writer->finish();
        co_return ec;
    }
};

// The response to an HTTP/2 client: HEADERS, DATA, and trailers.
struct H2ClientResponse {
    h2::H2Stream& stream;
    clock::duration idle;
    bool no_body = false;

    bool gone() const { return stream.closed(); }
    bool keep_client() const { return true; }
    void abort() { stream.reset(NGHTTP2_INTERNAL_ERROR); }

    awaitable<bool> head(ResponseHead& resp, const BodyFraming& rf, const Redactor* redactor, bool,
                         ExchangeResult& result) {
        if (!serialize_for_client(resp, redactor)) {  // redacts resp's fields in place
            result.refusal = unredactable_response();
            co_return false;
        }
        // Redaction changes the body's length, so a content-length cannot be kept.
        const bool length_changes = redactor && rf.kind == BodyKind::content_length;
        no_body = rf.kind == BodyKind::none || (rf.kind == BodyKind::content_length && rf.length == 0);
        const auto fields = h2::response_fields(std::move(resp.headers), length_changes);
        if (!stream.respond(resp.status, fields, no_body)) {
            result.reason = "client_gone";
            co_return false;
        }
        co_return true;
    }
    awaitable<error_code> operator()(std::string_view piece) {
        if (piece.empty()) co_return error_code{};
        const bool written = co_await stream.write(piece, idle);
        if (!written) co_return error_code(asio::error::broken_pipe);
        co_return error_code{};
    }
    awaitable<error_code> finish(std::vector<Header>&& trailers, const Redactor* redactor) {
        if (!no_body) stream.finish(trailers_for_client(std::move(trailers), redactor));
        co_return error_code{};
    }
};

}  // namespace vaultgate::net
