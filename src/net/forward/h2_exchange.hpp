#pragma once
// The forward step of the pipeline for an HTTP/2 origin, whatever the
// client's wire: the request goes as a stream of the session's connection to
// that origin (h2_origin.hpp), its body from a client body source, its
// response to a client response sink (client_sides.hpp has one of each for
// HTTP/1.1 and HTTP/2 clients). The response head is vetted and redacted as
// an HTTP/1.1 one is (exchange.hpp); trailers pass when the client can take
// them.
#include "net/forward/exchange.hpp"
#include "net/forward/h2_fields.hpp"
#include "net/forward/h2_origin.hpp"
#include "net/h2/h2_stream.hpp"

#include <memory>
#include <string>

namespace vaultgate::net {

// The origin stream as a body sink.
struct OriginSink {
    H2OriginStream* stream;
    clock::duration idle;
    awaitable<error_code> operator()(std::string_view piece) const {
        if (piece.empty()) co_return error_code{};
        const bool written = co_await stream->write(piece, idle);
        if (!written) co_return error_code(asio::error::broken_pipe);
        co_return error_code{};
    }
};

// Passes an HTTP/2 stream's body (H2Stream or H2OriginStream: read_body,
// body_view, consume_body) to `sink`, piece by piece. Each piece is copied
// first: the stream's buffer grows while the sink waits.
template <class Stream, class Sink>
awaitable<BodyResult> pump_h2_body(Stream& stream, clock::duration idle, Sink& sink) {
    BodyResult r;
    std::string piece;
    for (;;) {
        const h2::BodyState state = co_await stream.read_body(idle);
        if (state == h2::BodyState::end) break;
        if (state != h2::BodyState::data) {
            r.outcome = state == h2::BodyState::timed_out ? BodyOutcome::timed_out : BodyOutcome::source_closed;
            break;
        }
        piece.assign(stream.body_view());
        stream.consume_body(piece.size());
        if (co_await sink(std::string_view(piece))) {
            r.outcome = BodyOutcome::sink_error;
            break;
        }
        r.bytes += piece.size();
    }
    wipe_string(piece);
    co_return r;
}

// Opens a stream of `conn` for the plan's request and sends its head (wiped
// once nghttp2 holds its copy); null, with the refusal in `result`, when the
// connection takes no more streams.
inline std::shared_ptr<H2OriginStream> open_h2_request(H2OriginConnection& conn, RequestPlan& plan, bool te_trailers,
                                                       ExchangeResult& result) {
    std::vector<Header> fields = h2_request_fields(plan.outgoing, te_trailers);
    wipe_head(plan.outgoing);
    auto stream = conn.open(fields, injected_field(plan), plan.framing.kind != BodyKind::none);
    for (Header& h : fields) wipe_string(h.value);
    if (!stream)
        result.refusal = refusal(502, "upstream_write_failed", "the origin's HTTP/2 connection takes no more requests");
    return stream;
}

// Streams the client's body from `body` (awaitable<BodyResult>(OriginSink),
// trailers()) to the origin stream, then its trailers. A body cut short
// resets the stream, so the origin never sees a complete request, unless the
// origin answered and stopped reading (RFC 9113 section 8.1): its answer stands.
template <class Body>
awaitable<BodyResult> stream_h2_body(H2OriginStream& stream, Body& body, clock::duration idle) {
    const OriginSink sink{&stream, idle};
    BodyResult sent = co_await body(sink);
    if (sent.outcome == BodyOutcome::ok)
        stream.finish(body.trailers());
    else if (sent.outcome != BodyOutcome::sink_error || stream.status() == 0)
        stream.reset(NGHTTP2_CANCEL);
    co_return sent;
}

// Sends the plan's request as a new stream of `conn` (into `stream`): the
// head, then the body (buffered, or from `body` as stream_h2_body sends it).
template <class Body>
awaitable<bool> send_to_h2_origin(H2OriginConnection& conn, RequestPlan& plan, bool te_trailers, Body& body,
                                  const Limits& limits, std::shared_ptr<H2OriginStream>& stream,
                                  ExchangeResult& result) {
    stream = open_h2_request(conn, plan, te_trailers, result);
    if (!stream) co_return false;
    if (plan.framing.kind == BodyKind::none) co_return true;
    BodyResult sent;
    if (plan.buffered_body) {
        const OriginSink sink{stream.get(), limits.idle_timeout};
        sent.bytes = plan.buffered_body->size();
        if (co_await sink(*plan.buffered_body))
            sent.outcome = BodyOutcome::sink_error;
        else
            stream->finish();
    } else {
        sent = co_await stream_h2_body(*stream, body, limits.idle_timeout);
    }
    result.bytes_up = sent.bytes;
    if (sent.outcome == BodyOutcome::ok || (sent.outcome == BodyOutcome::sink_error && stream->status() != 0))
        co_return true;
    if (sent.outcome == BodyOutcome::invalid)
        result.refusal = refusal(400, "bad_chunked_body", std::move(sent.error));
    else if (sent.outcome == BodyOutcome::timed_out)
        result.refusal = refusal(408, "request_timeout", "the request body stalled");
    else if (sent.outcome == BodyOutcome::sink_error)
        result.refusal = refusal(502, "upstream_write_failed", "the origin closed the stream");
    else
        result.reason = "client_aborted";
    co_return false;
}

// Relays the origin stream's response to `out` (head(), operator(), finish(),
// abort(), gone(), keep_client()), redacting when `redactor` is set.
template <class Out>
awaitable<void> relay_from_h2_origin(H2OriginStream& origin, const RequestPlan& plan, Redactor* redactor,
                                     const Limits& limits, Out& out, ExchangeResult& result) {
    const auto sent_at = clock::now();
    const OriginHead got = co_await origin.read_head(limits.response_timeout);
    if (got != OriginHead::ready) {
        origin.reset(NGHTTP2_CANCEL);
        if (got == OriginHead::timed_out)
            result.refusal = refusal(504, "upstream_timeout", "the origin did not answer in time");
        else if (got == OriginHead::too_large)
            result.refusal = refusal(502, "bad_upstream_response",
                                     "the origin's response head is larger than the limit", "upstream_head_too_large");
        else if (out.gone())
            result.reason = "client_aborted";
        else
            result.refusal = refusal(502, "bad_upstream_response", "the origin ended the stream without a response");
        co_return;
    }
    result.upstream_seconds = std::chrono::duration<double>(clock::now() - sent_at).count();
    ResponseHead resp;
    resp.version_minor = 1;
    resp.status = origin.status();
    resp.headers = std::move(origin.fields());
    const auto rframing = response_framing(resp, plan.summary.method);
    if (!rframing.framing || resp.status == 101) {
        origin.reset(NGHTTP2_CANCEL);
        result.refusal = refusal(502, "bad_upstream_response", "the origin's response framing is invalid",
                                 resp.status == 101 ? "unexpected_101" : "bad_upstream_framing");
        co_return;
    }
    if (redactor && !content_coding_is_identity(resp)) {
        origin.reset(NGHTTP2_CANCEL);
        result.refusal = compressed_response_refusal();
        co_return;
    }
    const int status = resp.status;
    if (!co_await out.head(resp, *rframing.framing, redactor, origin.unconsumed() > 0, result)) {
        origin.reset(NGHTTP2_CANCEL);
        co_return;
    }
    result.status = status;
    BodyResult body;
    if (redactor) {
        RedactingWriter<Out> redacting{&out, redactor, {}};
        body = co_await pump_h2_body(origin, limits.response_timeout, redacting);
        if (body.outcome == BodyOutcome::ok && co_await redacting.finish()) body.outcome = BodyOutcome::sink_error;
    } else {
        body = co_await pump_h2_body(origin, limits.response_timeout, out);
    }
    result.bytes_down = body.bytes;
    if (body.outcome == BodyOutcome::ok && co_await out.finish(std::move(origin.trailers()), redactor))
        body.outcome = BodyOutcome::sink_error;
    if (body.outcome != BodyOutcome::ok) {
        // A partial response: the client's only honest signal is the cut.
        origin.reset(NGHTTP2_CANCEL);
        out.abort();
        result.reason = body.outcome == BodyOutcome::sink_error ? "client_gone" : "response_truncated";
        co_return;
    }
    result.keep_upstream = true;
    result.keep_client = out.keep_client();
}

}  // namespace vaultgate::net
