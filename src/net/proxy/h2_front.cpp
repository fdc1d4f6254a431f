// The pipeline's front (pipeline.hpp) for the streams of an intercepted
// connection whose client chose h2: each stream is one request, decided,
// injected, forwarded, redacted and logged as an HTTP/1.1 request is. The
// nghttp2 side (frames, flow control, guards) is net/h2; here each stream is
// translated to the HTTP/1.1 head the pipeline decides, then sent as a stream
// of the session's HTTP/2 connection to the origin when the origin speaks h2
// (net/forward/h2_exchange.hpp, trailers both ways), else over an HTTP/1.1
// connection of its own (from the thread's pool, as the MITM session's); the
// origin's answer goes back as HEADERS, DATA and trailers.
#include "net/forward/client_sides.hpp"
#include "net/forward/h2_exchange.hpp"
#include "net/h2/h1_translation.hpp"
#include "net/h2/h2_server.hpp"
#include "net/io/http_io.hpp"
#include "net/io/tls_socket.hpp"
#include "net/proxy/connection.hpp"
#include "net/proxy/pipeline.hpp"
#include "net/proxy/proxy_responses.hpp"
#include "net/upstream/upstream_pool.hpp"
#include "vaultgate/observe/diag_log.hpp"

namespace vaultgate::net {

namespace {

using h2::H2Stream;

// The client's body on its way to an HTTP/2 origin while the response comes
// back. The pump owns what it uses, so it may outlive the front when the
// exchange failed first; it ends with the body, a reset, or an idle stall.
struct DuplexBody {
    DuplexBody(std::shared_ptr<H2Stream> client_stream, std::shared_ptr<H2OriginStream> origin_stream,
               clock::duration idle_timeout, bool continue_first)
        : client(std::move(client_stream)),
          origin(std::move(origin_stream)),
          idle(idle_timeout),
          expect_continue(continue_first),
          done_wake(client->executor()) {}
    std::shared_ptr<H2Stream> client;
    std::shared_ptr<H2OriginStream> origin;
    clock::duration idle;
    bool expect_continue;
    BodyResult sent;
    bool done = false;
    asio::steady_timer done_wake;
};

awaitable<void> pump_duplex_body(std::shared_ptr<DuplexBody> duplex) {
    H2ClientBody body{*duplex->client, duplex->expect_continue, duplex->idle};
    try {
        duplex->sent = co_await stream_h2_body(*duplex->origin, body, duplex->idle);
    } catch (...) {
        log_exception("h2 request body", std::current_exception());
        duplex->origin->reset(NGHTTP2_INTERNAL_ERROR);
    }
    duplex->done = true;
    duplex->done_wake.cancel();
}

class H2StreamFront {
public:
    H2StreamFront(ClientContext& ctx, tls_stream& client, const Authority& dest, const std::string& pool_key,
                  std::shared_ptr<H2Stream> stream, bool te_trailers)
        : te_trailers_(te_trailers),
          ctx_(ctx),
          limits_(ctx.settings->limits),
          dest_(dest),
          pool_key_(pool_key),
          stream_(std::move(stream)),
          watchdog_(std::make_shared<Watchdog>(client.get_executor())),
          upstream_buf_(upstream_read_size),
          io_{client,
              no_client_bytes_,
              upstream_,
              upstream_buf_,
              *watchdog_,
              limits_,
              [](bool&, ExchangeResult&) -> awaitable<bool> { co_return false; },
              [this] { drop_upstream(); },
              write_buffer_},
          start_(clock::now()) {
        watchdog_->start();
        stream_->set_watchdog(watchdog_);
    }
    ~H2StreamFront() {
        drop_origin_stream();
        drop_upstream();
        watchdog_->stop();
    }
    H2StreamFront(const H2StreamFront&) = delete;
    H2StreamFront& operator=(const H2StreamFront&) = delete;

    std::shared_ptr<const GatewayState> snapshot() { return ctx_.rt->snapshot(); }
    Decision decide(const GatewayState& state, RequestHead&& req) {
        return decide_bound_request(state, ctx_.session_id, dest_, std::move(req), std::chrono::system_clock::now());
    }
    awaitable<void> send_refusal(const Refusal& refusal);
    awaitable<Refusal> read_whole_body(const RequestPlan& plan, WipedBytes& body);
    awaitable<bool> send_request(RequestPlan& plan, ExchangeResult& result);
    awaitable<void> relay_response(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result) {
        if (!origin_stream_) return relay_from_h1(plan, redactor, result);
        return relay_from_h2(plan, redactor, result);
    }
    void forward_done(const ExchangeResult& result);
    void log(const RequestLine& line) { record_request(ctx_, "mitm", dest_, start_, line, "h2"); }

private:
    awaitable<bool> send_h1(RequestPlan& plan, ExchangeResult& result);
    awaitable<void> relay_from_h1(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result);
    awaitable<void> relay_from_h2(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result);
    void drop_origin_stream();
    awaitable<bool> connect(bool& reused, const RequestPlan& plan, ExchangeResult& result);
    // Streams the client's DATA to the origin (chunked when `chunked`).
    awaitable<bool> send_body(bool chunked, ExchangeResult& result);
    void drop_upstream();

    bool te_trailers_;  // the client sent te: trailers (gRPC does), which an h2 origin hears too
    ClientContext& ctx_;
    const Limits& limits_;
    const Authority& dest_;
    const std::string& pool_key_;
    std::shared_ptr<H2Stream> stream_;
    std::shared_ptr<Watchdog> watchdog_;  // this stream's upstream steps; killed when the stream resets
    std::optional<tls_stream> upstream_;
    std::shared_ptr<H2OriginStream> origin_stream_;  // the request's, when the origin speaks h2
    std::shared_ptr<DuplexBody> duplex_;             // its streamed body, when it has one
    ReadBuffer no_client_bytes_{0};                  // the client's bytes come as DATA frames, never through here
    ReadBuffer upstream_buf_;
    std::string write_buffer_;
    ExchangeIo<tls_stream, tls_stream> io_;
    clock::time_point start_;
};

void H2StreamFront::drop_upstream() {
    if (!upstream_) return;
    watchdog_->unwatch(upstream_->next_layer());
    error_code ignored;
    upstream_->next_layer().close(ignored);
    upstream_.reset();
    upstream_buf_.consume(upstream_buf_.size());
}

awaitable<void> H2StreamFront::send_refusal(const Refusal& refusal) {
    // Rendered as for HTTP/1.1, then taken apart: one renderer for every wire.
    const std::string text = refusal_response(refusal, dest_);
    ResponseHead head;
    const ParseResult parsed = parse_response_head(text, HeadLimits{}, head);
    const std::string_view body = std::string_view(text).substr(parsed.consumed);
    const auto fields = h2::response_fields(std::move(head.headers), false);
    if (!stream_->respond(head.status, fields, body.empty())) co_return;
    if (!body.empty() && co_await stream_->write(body, limits_.idle_timeout)) stream_->finish();
}

awaitable<Refusal> H2StreamFront::read_whole_body(const RequestPlan& plan, WipedBytes& out) {
    const std::size_t limit = limits_.sign_body_bytes;
    if (plan.framing.kind == BodyKind::content_length && plan.framing.length > limit)
        co_return body_too_large_to_sign(limit);
    if (plan.expect_continue) stream_->send_continue();
    for (;;) {
        const h2::BodyState state = co_await stream_->read_body(limits_.idle_timeout);
        if (state == h2::BodyState::end) co_return Refusal{};
        if (state == h2::BodyState::timed_out) co_return refusal(408, "request_timeout", "the request body stalled");
        if (state == h2::BodyState::closed) co_return body_cut_short();
        const std::string_view piece = stream_->body_view();
        if (piece.size() > limit - out.size()) co_return body_too_large_to_sign(limit);
        out.append(piece.data(), piece.size());
        stream_->consume_body(piece.size());
    }
}

awaitable<bool> H2StreamFront::connect(bool& reused, const RequestPlan& plan, ExchangeResult& result) {
    reused = upstream_.has_value();
    if (upstream_) co_return true;
    if (auto pooled = this_thread_upstream_pool().take(pool_key_)) {
        upstream_.emplace(std::move(*pooled));
        watchdog_->watch(upstream_->next_layer());
        reused = true;
        co_return true;
    }
    result.refusal = co_await open_bound_upstream(ctx_, plan.session->policy, dest_, *watchdog_, upstream_);
    co_return !result.refusal;
}

void H2StreamFront::drop_origin_stream() {
    if (!origin_stream_) return;
    watchdog_->unwatch(*origin_stream_);
    origin_stream_.reset();
}

awaitable<bool> H2StreamFront::send_request(RequestPlan& plan, ExchangeResult& result) {
    const bool grpc = is_grpc(plan.outgoing);
    OriginRoute route = co_await route_to_origin(ctx_, plan.session->policy, dest_, pool_key_, *watchdog_, upstream_);
    if (route.refusal) {
        wipe_head(plan.outgoing);
        result.refusal = std::move(route.refusal);
        co_return false;
    }
    if (route.h2) {
        // A streamed body goes up while the response comes down (full duplex,
        // as gRPC streams need); a buffered one (aws-sigv4) first.
        bool sent = false;
        if (plan.framing.kind != BodyKind::none && !plan.buffered_body) {
            origin_stream_ = open_h2_request(*route.h2, plan, te_trailers_, result);
            if (origin_stream_) {
                duplex_ =
                    std::make_shared<DuplexBody>(stream_, origin_stream_, limits_.idle_timeout, plan.expect_continue);
                asio::co_spawn(watchdog_->executor(), pump_duplex_body(duplex_), asio::detached);
                sent = true;
            }
        } else {
            H2ClientBody body{*stream_, plan.expect_continue, limits_.idle_timeout};
            sent = co_await send_to_h2_origin(*route.h2, plan, te_trailers_, body, limits_, origin_stream_, result);
        }
        // A reset of the client's stream resets the origin's (the watchdog is killed).
        if (origin_stream_) watchdog_->watch(*origin_stream_);
        co_return sent;
    }
    if (grpc) {
        // gRPC needs trailers, so HTTP/2, to the origin, which answered in
        // HTTP/1.1: refused whole rather than mangled (502 is UNAVAILABLE to a
        // gRPC client). The connection, unused, goes back to the pool.
        wipe_head(plan.outgoing);
        result.refusal = refusal(502, "grpc_needs_h2_origin", "gRPC needs HTTP/2 to the origin, which this one lacks");
        result.refusal.reason_header = true;
        result.keep_upstream = true;
        co_return false;
    }
    co_return co_await send_h1(plan, result);
}

awaitable<void> H2StreamFront::relay_from_h2(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result) {
    H2ClientResponse out{*stream_, limits_.idle_timeout};
    co_await relay_from_h2_origin(*origin_stream_, plan, redactor, limits_, out, result);
    if (!duplex_) co_return;
    // A response that went out whole waits for the request body's end (its
    // bytes go in the log line); after a failure the pump ends on its own.
    if (result.refusal || !result.reason.empty()) co_return;
    while (!duplex_->done) {
        duplex_->done_wake.expires_at(clock::time_point::max());
        co_await duplex_->done_wake.async_wait(use_tuple);
    }
    result.bytes_up = duplex_->sent.bytes;
}

awaitable<bool> H2StreamFront::send_h1(RequestPlan& plan, ExchangeResult& result) {
    std::string wire = serialize_request_head(plan.outgoing);
    wipe_head(plan.outgoing);
    bool reused = false;
    error_code write_error;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!co_await connect(reused, plan, result)) {
            wipe_string(wire);
            co_return false;
        }
        write_error = co_await write_all(*upstream_, wire, *watchdog_, limits_.idle_timeout);
        // A pooled connection the origin closed while idle fails on first use;
        // nothing was delivered, so one retry on a fresh connection is safe.
        if (write_error && reused && !stream_->closed()) {
            drop_upstream();
            continue;
        }
        break;
    }
    wipe_string(wire);
    if (write_error) {
        fail_exchange(io_, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
        co_return false;
    }
    if (plan.framing.kind == BodyKind::none) co_return true;
    if (plan.buffered_body) {
        result.bytes_up = plan.buffered_body->size();
        if (co_await write_all(*upstream_, *plan.buffered_body, *watchdog_, limits_.idle_timeout)) {
            fail_exchange(io_, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
            co_return false;
        }
        co_return true;
    }
    if (plan.expect_continue) stream_->send_continue();
    co_return co_await send_body(plan.framing.kind == BodyKind::chunked, result);
}

awaitable<bool> H2StreamFront::send_body(bool chunked, ExchangeResult& result) {
    for (;;) {
        const h2::BodyState state = co_await stream_->read_body(limits_.idle_timeout);
        if (state == h2::BodyState::end) break;
        if (state != h2::BodyState::data) {
            // Cut without its end: the origin never sees a complete request.
            drop_upstream();
            if (state == h2::BodyState::timed_out)
                result.refusal = refusal(408, "request_timeout", "the request body stalled");
            else
                result.reason = "client_aborted";
            co_return false;
        }
        const std::string_view piece = stream_->body_view();
        std::string_view out = piece;
        if (chunked) {
            write_buffer_.clear();
            append_chunk(write_buffer_, piece);
            out = write_buffer_;
        }
        if (co_await write_all(*upstream_, out, *watchdog_, limits_.idle_timeout)) {
            fail_exchange(io_, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
            co_return false;
        }
        result.bytes_up += piece.size();
        stream_->consume_body(piece.size());
    }
    if (chunked && co_await write_all(*upstream_, last_chunk, *watchdog_, limits_.idle_timeout)) {
        fail_exchange(io_, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
        co_return false;
    }
    co_return true;
}

awaitable<void> H2StreamFront::relay_from_h1(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result) {
    const auto sent_at = clock::now();
    ResponseHead resp;
    for (int informational = 0;; ++informational) {
        ParseResult parsed;
        const auto outcome =
            co_await read_head(*upstream_, upstream_buf_, resp, parse_response_head, HeadLimits{}, *watchdog_,
                               {limits_.response_timeout, limits_.response_timeout}, parsed);
        if (outcome != HeadOutcome::ok) {
            if (stream_->closed())
                result.reason = "client_aborted";
            else if (outcome == HeadOutcome::timed_out)
                fail_exchange(io_, result, refusal(504, "upstream_timeout", "the origin did not answer in time"));
            else
                fail_exchange(io_, result,
                              refusal(502, "bad_upstream_response", "the origin sent no valid HTTP response"));
            drop_upstream();
            co_return;
        }
        if (resp.status >= 200 || resp.status == 101) break;
        // 1xx heads are not passed on: h2 clients get 100 from vaultgate itself.
        if (informational >= max_informational_responses) {
            fail_exchange(
                io_, result,
                refusal(502, "bad_upstream_response", "the origin sent too many informational (1xx) responses",
                        "too_many_informational_responses"));
            co_return;
        }
        resp = ResponseHead{};
    }
    result.upstream_seconds = std::chrono::duration<double>(clock::now() - sent_at).count();
    const auto rframing = response_framing(resp, plan.summary.method);
    if (resp.status == 101 || !rframing.framing) {
        fail_exchange(io_, result,
                      refusal(502, "bad_upstream_response", "the origin's response framing is invalid",
                              resp.status == 101 ? "unexpected_101" : "bad_upstream_framing"));
        co_return;
    }
    const BodyFraming& rf = *rframing.framing;
    if (redactor && !content_coding_is_identity(resp)) {
        fail_exchange(io_, result, compressed_response_refusal());
        co_return;
    }
    const bool upstream_close = rf.kind == BodyKind::until_close || wants_close(resp.headers, resp.version_minor);
    // The client's side is the one an HTTP/2 origin's answer takes (client_sides.hpp).
    H2ClientResponse out{*stream_, limits_.idle_timeout};
    const int status = resp.status;
    if (!co_await out.head(resp, rf, redactor, false, result)) {
        drop_upstream();
        co_return;
    }
    result.status = status;
    BodyResult body;
    if (redactor) {
        RedactingWriter<H2ClientResponse> redacting{&out, redactor, {}};
        body = co_await read_response_body(io_, rf, std::ref(redacting));
        if (body.outcome == BodyOutcome::ok && co_await redacting.finish()) body.outcome = BodyOutcome::sink_error;
    } else {
        body = co_await read_response_body(io_, rf, std::ref(out));
    }
    result.bytes_down = body.bytes;
    if (body.outcome != BodyOutcome::ok) {
        drop_upstream();
        // A partial response: the stream's reset is the only honest signal left.
        out.abort();
        result.reason = body.outcome == BodyOutcome::sink_error ? "client_gone" : "response_truncated";
        co_return;
    }
    std::vector<Header> no_trailers;  // an HTTP/1.1 origin's are not kept
    co_await out.finish(std::move(no_trailers), redactor);
    if (upstream_close) drop_upstream();
    result.keep_upstream = !upstream_close;
}

void H2StreamFront::forward_done(const ExchangeResult& result) {
    drop_origin_stream();
    if (!upstream_) return;
    if (!result.keep_upstream || !upstream_buf_.empty() || ctx_.rt->draining.load(std::memory_order_relaxed)) {
        drop_upstream();
        return;
    }
    watchdog_->unwatch(upstream_->next_layer());
    this_thread_upstream_pool().give(pool_key_, std::move(*upstream_), false);
    upstream_.reset();
}

// One stream: refused at once when its head is too large or malformed, else
// the pipeline.
awaitable<void> serve_stream(ClientContext& ctx, tls_stream& client, const Authority& dest, const std::string& pool_key,
                             std::shared_ptr<H2Stream> stream) {
    // nghttp2 let te through only as "trailers"; to_request_head drops it.
    const auto& fields = stream->request().fields;
    const bool te_trailers = std::any_of(fields.begin(), fields.end(), [](const Header& h) { return h.name == "te"; });
    H2StreamFront front(ctx, client, dest, pool_key, stream, te_trailers);
    // A head refused here is logged with none of the client's bytes, as an
    // HTTP/1.1 head that cannot be read is: its path may hold a token.
    RequestHead summary;
    summary.method = "-";
    RequestLine line;
    line.request = &summary;
    if (stream->request().too_large) {
        co_await answer_refusal(
            front, refusal(431, "bad_request", "the request's header list is larger than the limit", "invalid_request"),
            line);
        co_return;
    }
    RequestHead head;
    if (const std::string_view malformed = h2::to_request_head(std::move(stream->request()), head);
        !malformed.empty()) {
        log_debug("h2: malformed request on " + dest.host + ": " + std::string(malformed));
        stream->reset(NGHTTP2_PROTOCOL_ERROR);
        line.reason = "malformed_request";
        front.log(line);
        co_return;
    }
    co_await serve_request(front, *ctx.rt, std::move(head));
}

}  // namespace

awaitable<void> serve_h2_client(ClientContext& ctx, tls_stream& client, const Authority& dest) {
    const Limits& limits = ctx.settings->limits;
    h2::H2ServerLimits h2_limits;
    h2_limits.max_concurrent_streams = static_cast<std::uint32_t>(limits.h2_max_concurrent_streams);
    h2_limits.header_bytes = limits.header_bytes;
    h2_limits.header_count = limits.header_count;
    h2_limits.idle_timeout = limits.idle_timeout;
    const std::string pool_key = UpstreamPool::key(ctx.session_id, dest.host, dest.port, ctx.settings->generation);
    h2::H2ServerConnection conn(client, *ctx.watchdog, h2_limits, ctx.rt->draining);
    co_await conn.run([&](std::shared_ptr<H2Stream> stream) {
        asio::co_spawn(
            client.get_executor(),
            [&, stream]() -> awaitable<void> {
                try {
                    co_await serve_stream(ctx, client, dest, pool_key, stream);
                } catch (...) {
                    log_exception("h2 stream", std::current_exception());
                    stream->reset(NGHTTP2_INTERNAL_ERROR);
                }
                stream->discard_body();
                conn.stream_done();
            },
            asio::detached);
    });
}

}  // namespace vaultgate::net
