// The MITM request path: TLS to the client with a leaf for the CONNECT host,
// then (HTTP/2 clients aside: h2_front.cpp) for each request on the connection: strict parsing, the Host check,
// injection, a verified TLS connection to the bound origin, and streaming of
// both bodies. Between requests the upstream connection goes back to the
// thread's pool, keyed by session and origin, so it is never shared between
// sessions.
#include "net/forward/client_sides.hpp"
#include "net/forward/h2_exchange.hpp"
#include "net/io/http_io.hpp"
#include "net/io/tls_socket.hpp"
#include "net/proxy/connection.hpp"
#include "net/proxy/pipeline.hpp"
#include "net/proxy/proxy_responses.hpp"
#include "net/upstream/dialer.hpp"
#include "net/upstream/tls_contexts.hpp"
#include "net/upstream/upstream_pool.hpp"
#include "vaultgate/mem/block_cache.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <optional>

namespace vaultgate::net {

namespace {

// Why the client's TLS handshake failed, for the access log: what the
// client's alert says when it sent one, else how it ended.
std::string_view client_handshake_reason(const error_code& ec, bool timed_out) {
    if (timed_out) return "handshake_timeout";
    if (ec == ssl::error::stream_truncated || ec == asio::error::eof || ec == asio::error::connection_reset)
        return "client_tls_closed";
    if (ec.category() == asio::error::get_ssl_category()) {
        switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
            case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
                return "client_tls_unknown_ca";
            case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
            case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
            case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
            case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
                return "client_tls_cert_rejected";
            default:
                break;
        }
    }
    return "client_tls_failed";
}

// The MITM session is the pipeline's front (pipeline.hpp) for the requests
// of its tunnel: HTTP/1.1 over TLS on both sides.
class MitmSession {
public:
    MitmSession(ClientContext ctx, tcp::socket client, Authority dest)
        : ctx_(std::move(ctx)),
          rt_(*ctx_.rt),
          limits_(ctx_.settings->limits),
          dest_(std::move(dest)),
          client_(std::move(client), rt_.client_facing_tls),
          client_buf_(16384),
          upstream_buf_(upstream_read_size),
          io_{client_,
              client_buf_,
              upstream_,
              upstream_buf_,
              *ctx_.watchdog,
              limits_,
              [this](bool& reused, ExchangeResult& r) { return ensure_upstream(reused, r); },
              [this] { drop_upstream(); },
              write_buffer_} {
        head_limits_ = request_head_limits(limits_);
        pool_key_ = UpstreamPool::key(ctx_.session_id, dest_.host, dest_.port, ctx_.settings->generation);
    }
    ~MitmSession() {  // also when the frame goes without run() ending
        drop_origin_stream();
        stop_lending();
    }
    MitmSession(const MitmSession&) = delete;
    MitmSession& operator=(const MitmSession&) = delete;

    awaitable<void> run();

    // The front's side of the pipeline.
    awaitable<HeadOutcome> read_request(RequestHead& req, ParseResult& parsed);
    Refusal head_read(HeadOutcome outcome, const ParseResult& parsed);
    std::shared_ptr<const GatewayState> snapshot() { return rt_.snapshot(); }
    Decision decide(const GatewayState& state, RequestHead&& req) {
        return decide_bound_request(state, ctx_.session_id, dest_, std::move(req), std::chrono::system_clock::now());
    }
    awaitable<void> send_refusal(const Refusal& refusal);
    awaitable<Refusal> read_whole_body(const RequestPlan& plan, WipedBytes& body) {
        return net::read_whole_body(io_, plan, body);
    }
    awaitable<bool> send_request(RequestPlan& plan, ExchangeResult& result);
    awaitable<void> relay_response(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result) {
        const bool draining = rt_.draining.load(std::memory_order_relaxed);
        if (!origin_stream_) return net::relay_response(io_, plan, redactor, draining, result);
        return relay_from_h2(plan, redactor, draining, result);
    }
    void forward_done(const ExchangeResult& result) {
        drop_origin_stream();
        upstream_reusable_ = upstream_.has_value() && result.keep_upstream;
    }
    void log(const RequestLine& line) { record_request(ctx_, "mitm", dest_, request_start_, line); }

private:
    awaitable<bool> handshake();
    awaitable<void> relay_from_h2(const RequestPlan& plan, Redactor* redactor, bool draining, ExchangeResult& result);
    void drop_origin_stream();
    awaitable<bool> ensure_upstream(bool& reused, ExchangeResult& result);
    void drop_upstream();
    // Hands the upstream connection to the pool, or closes it when it cannot
    // serve another request; `client_stays` lends it (UpstreamPool::give).
    void release_upstream(bool client_stays);
    void stop_lending();
    void shed_idle_memory();
    awaitable<bool> wait_while_idle();

    ClientContext ctx_;
    Runtime& rt_;
    const Limits& limits_;
    Authority dest_;
    tls_stream client_;
    std::optional<tls_stream> upstream_;
    std::shared_ptr<H2OriginStream> origin_stream_;  // the request's, when the origin speaks h2
    bool upstream_reusable_ = false;                 // the last exchange left it ready for another request
    bool lending_ = false;                           // counted as a lender by the thread's pool
    ReadBuffer client_buf_;
    ReadBuffer upstream_buf_;
    std::string write_buffer_;  // body pieces framed for the client or the origin (BodyWriter)
    ExchangeIo<tls_stream, tls_stream> io_;
    const EgressPolicy* policy_ = nullptr;  // the current request's session's, for dialling
    HeadLimits head_limits_;
    std::string pool_key_;  // this session's upstream connections to dest_
    clock::time_point request_start_;
    bool first_request_ = true;
};

void MitmSession::drop_upstream() {
    if (!upstream_) return;
    ctx_.watchdog->unwatch(upstream_->next_layer());
    error_code ignored;
    upstream_->next_layer().close(ignored);
    upstream_.reset();
    // What that connection sent beyond its last response goes with it; the
    // buffer itself stays for the next connection (shed when idle).
    upstream_buf_.consume(upstream_buf_.size());
}

awaitable<void> MitmSession::send_refusal(const Refusal& refusal) {
    const std::string reply = refusal_response(refusal, dest_);
    co_await write_all(client_, reply, *ctx_.watchdog, limits_.idle_timeout);
}

// The origin is asked for h2 whenever no HTTP/1.1 connection is at hand;
// one that speaks it takes the request as a stream. A WebSocket upgrade
// needs HTTP/1.1 to the origin (vaultgate offers no extended CONNECT), so it
// takes or dials an HTTP/1.1 connection as before.
awaitable<bool> MitmSession::send_request(RequestPlan& plan, ExchangeResult& result) {
    policy_ = &plan.session->policy;
    if (!upstream_ && !plan.websocket) {
        if (Refusal broken = broken_chunked_body(client_buf_, plan)) {
            wipe_head(plan.outgoing);
            result.refusal = std::move(broken);
            co_return false;
        }
        OriginRoute route = co_await route_to_origin(ctx_, *policy_, dest_, pool_key_, *ctx_.watchdog, upstream_);
        stop_lending();  // it holds a connection of its own from here
        if (route.refusal) {
            wipe_head(plan.outgoing);
            result.refusal = std::move(route.refusal);
            co_return false;
        }
        if (route.h2) {
            H1ClientBody<tls_stream, tls_stream> body{io_, plan};
            const bool sent = co_await send_to_h2_origin(*route.h2, plan, false, body, limits_, origin_stream_, result);
            if (origin_stream_) ctx_.watchdog->watch(*origin_stream_);
            co_return sent;
        }
    }
    co_return co_await net::send_request(io_, plan, result);
}

awaitable<void> MitmSession::relay_from_h2(const RequestPlan& plan, Redactor* redactor, bool draining,
                                           ExchangeResult& result) {
    H1ClientResponse<tls_stream, tls_stream> out{io_, plan, draining};
    ctx_.watchdog->disarm();  // the stream times the wait for the response
    co_await relay_from_h2_origin(*origin_stream_, plan, redactor, limits_, out, result);
}

void MitmSession::drop_origin_stream() {
    if (!origin_stream_) return;
    ctx_.watchdog->unwatch(*origin_stream_);
    origin_stream_.reset();
}

awaitable<bool> MitmSession::handshake() {
    auto leaf = rt_.leaves->get(dest_.host);
    if (!leaf || !use_leaf(client_, *leaf, rt_.ca->chain_cert())) {
        log_warn("mitm: cannot use a leaf certificate for " + dest_.host + ": " + openssl_errors());
        co_return false;
    }
    if (!ctx_.settings->mitm_alpn.empty()) offer_alpn(client_, ctx_.settings->mitm_alpn);
    const auto start = clock::now();
    ctx_.watchdog->arm(limits_.handshake_timeout);
    auto [ec] = co_await client_.async_handshake(ssl::stream_base::server, use_tuple);
    if (ec) {
        log_debug("mitm: client TLS handshake for " + dest_.host + " failed: " + ec.message());
        // A drain or a revoked session cut it: not the client's failure.
        if (ctx_.watchdog->killed()) co_return false;
        auto e = access_entry(ctx_, "mitm", "TLS", dest_, start);
        e.reason = std::string(client_handshake_reason(ec, ctx_.watchdog->expired()));
        rt_.record(e);
        co_return false;
    }
    co_return true;
}

awaitable<bool> MitmSession::ensure_upstream(bool& reused, ExchangeResult& result) {
    reused = upstream_.has_value();
    if (upstream_) co_return true;
    auto pooled = this_thread_upstream_pool().take(pool_key_);
    stop_lending();  // it holds or dials a connection of its own from here
    if (pooled) {
        upstream_.emplace(std::move(*pooled));
        ctx_.watchdog->watch(upstream_->next_layer());
        reused = true;
        co_return true;
    }
    result.refusal = co_await open_bound_upstream(ctx_, *policy_, dest_, *ctx_.watchdog, upstream_);
    co_return !result.refusal;
}

awaitable<HeadOutcome> MitmSession::read_request(RequestHead& req, ParseResult& parsed) {
    HeadTimeouts timeouts{first_request_ ? limits_.header_timeout : limits_.idle_timeout, limits_.header_timeout};
    if (!first_request_ && client_buf_.empty()) timeouts.first_byte = limits_.header_timeout;  // waited in run()
    first_request_ = false;
    ctx_.watchdog->set_idle(client_buf_.empty());
    return read_head(client_, client_buf_, req, parse_request_head, head_limits_, *ctx_.watchdog, timeouts, parsed);
}

Refusal MitmSession::head_read(HeadOutcome outcome, const ParseResult& parsed) {
    ctx_.watchdog->set_idle(false);
    request_start_ = clock::now();
    // A head that failed to parse is not logged field by field.
    if (outcome == HeadOutcome::invalid)
        return refusal(parsed.http_status, "bad_request", parsed.reason, "invalid_request");
    if (outcome == HeadOutcome::timed_out && !client_buf_.empty()) {
        Refusal late = refusal(408, "request_timeout", "the request head did not arrive in time");
        late.logged = false;
        return late;
    }
    return {};
}

// A healthy upstream connection goes to the thread's pool when the client
// waits for its next request, for the next request of the same session to
// the same origin: this client's most often, another client's when this one
// idles. One that cannot serve another request is closed.
void MitmSession::release_upstream(bool client_stays) {
    if (!upstream_) return;
    if (!upstream_reusable_ || !upstream_buf_.empty() || rt_.draining.load(std::memory_order_relaxed)) {
        drop_upstream();
        return;
    }
    ctx_.watchdog->unwatch(upstream_->next_layer());
    this_thread_upstream_pool().give(pool_key_, std::move(*upstream_), client_stays);
    upstream_.reset();
    lending_ = client_stays;
}

void MitmSession::stop_lending() {
    if (!lending_) return;
    lending_ = false;
    this_thread_upstream_pool().end_lending();
}

// What an idle connection can give back: OpenSSL's record buffers, both
// receive buffers and the write buffer (its upstream connection went back to
// the pool already).
void MitmSession::shed_idle_memory() {
    block_cache::FreeDirectly not_for_new_connections;
    client_.release_buffers();
    std::string().swap(write_buffer_);
    client_buf_.release_if_empty();
    upstream_buf_.release_if_empty();
}

// Waits, between requests, for the client's next bytes (outside the request's
// large frame). A client that comes back within a short linger finds its
// buffers as it left them, so a busy keep-alive connection allocates nothing
// per request; after the linger the connection sheds what it can. False when
// the connection should end (idle timeout, session closed, drain).
awaitable<bool> MitmSession::wait_while_idle() {
    constexpr clock::duration linger = UpstreamPool::linger;
    ctx_.watchdog->set_idle(true);
    clock::duration left = limits_.idle_timeout;
    if (left > linger) {
        ctx_.watchdog->arm(linger);
        auto [ec] = co_await client_.next_layer().async_wait(tcp::socket::wait_read, use_tuple);
        if (!ec) co_return true;
        if (!ctx_.watchdog->expired() || ctx_.watchdog->killed()) co_return false;
        left -= linger;
    }
    shed_idle_memory();
    ctx_.watchdog->arm(left);
    auto [ec] = co_await client_.next_layer().async_wait(tcp::socket::wait_read, use_tuple);
    co_return !ec;
}

awaitable<void> MitmSession::run() {
    ctx_.watchdog->watch(client_.next_layer());
    const bool shaken = co_await handshake();
    if (shaken && selected_alpn(client_) == "h2") {
        co_await serve_h2_client(ctx_, client_, dest_);
    } else if (shaken) {
        // A drain ends keep-alive connections after the request in flight.
        while (co_await serve_request(*this, rt_) && !rt_.draining.load(std::memory_order_relaxed)) {
            // A pipelined request goes on at once, on the same upstream
            // connection. Otherwise the connection waits here, outside
            // the request's large frame, and its upstream connection waits in
            // the pool: a burst of clients shares a few instead of each
            // holding its own.
            if (client_buf_.empty() && !SSL_has_pending(client_.native_handle())) {
                release_upstream(true);
                if (!co_await wait_while_idle()) break;
            }
        }
        // No close_notify exchange: every response the proxy sends is framed, so
        // the client cannot mistake the close for the end of a body, and waiting
        // for the peer's close_notify would hold the connection open for nothing.
    }
    stop_lending();
    release_upstream(false);
    ctx_.watchdog->stop();  // it watches client_, which goes with this session
    error_code ignored;
    client_.next_layer().close(ignored);
}

}  // namespace

awaitable<void> run_mitm(ClientContext ctx, tcp::socket client, Authority dest) {
    MitmSession session(std::move(ctx), std::move(client), std::move(dest));
    co_await session.run();
}

}  // namespace vaultgate::net
