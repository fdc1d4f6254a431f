// The MITM request path: TLS to the client with a leaf for the CONNECT host,
// then, for each request on the connection: strict parsing, the Host check,
// injection, a verified TLS connection to the bound origin, and streaming of
// both bodies. Between requests the upstream connection goes back to the
// thread's pool, keyed by session and origin, so it is never shared between
// sessions.
#include "net/proxy/connection.hpp"
#include "net/io/tls_socket.hpp"
#include "net/upstream/dialer.hpp"
#include "net/io/http_io.hpp"
#include "net/proxy/proxy_responses.hpp"
#include "net/proxy/exchange.hpp"
#include "net/proxy/session_auth.hpp"
#include "net/upstream/tls_contexts.hpp"
#include "net/upstream/upstream_pool.hpp"
#include "vaultgate/mem/block_cache.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/credentials/inject.hpp"

#include <optional>

namespace vaultgate::net {

namespace {

std::string_view path_of(std::string_view target) {
    auto end = target.find_first_of("?#");
    return end == std::string_view::npos ? target : target.substr(0, end);
}

bool is_websocket_upgrade(const RequestHead& req, const std::vector<std::string>& options) {
    auto upgrade = req.get("upgrade");
    return upgrade && iequals(*upgrade, "websocket") && listed_in(options, "upgrade") && req.method == "GET";
}

// Outcome of validating one request against the tunnel's destination.
struct TargetCheck {
    int status = 0;              // 0 = fine
    std::string code;
    std::string message;
    std::string origin_form;
};

TargetCheck check_target(const RequestHead& req, const Authority& dest) {
    TargetCheck out;
    auto host = req.get("host");
    if (!host) return {400, "missing_host", "the request has no Host header", {}};
    auto parsed = parse_authority(*host, 443);
    if (!parsed) return {400, "bad_host", "the Host header is not a valid host[:port]", {}};
    if (parsed.authority->host != dest.host || parsed.authority->port != dest.port)
        return {421, "misdirected_request", "the Host header names another host than the CONNECT target", {}};

    std::string_view target = req.target;
    if (req.method == "CONNECT") return {405, "method_not_allowed", "CONNECT inside a tunnel is not allowed", {}};
    if (target == "*") {
        if (req.method != "OPTIONS") return {400, "bad_target", "'*' is only valid with OPTIONS", {}};
        out.origin_form = "*";
        return out;
    }
    if (!target.empty() && target.front() == '/') {
        out.origin_form = std::string(target);
        return out;
    }
    constexpr std::string_view https = "https://";
    if (target.size() > https.size() && iequals(target.substr(0, https.size()), https)) {
        auto rest = target.substr(https.size());
        auto slash = rest.find_first_of("/?#");
        auto authority = parse_authority(rest.substr(0, slash), 443);
        if (!authority || authority.authority->host != dest.host || authority.authority->port != dest.port)
            return {421, "misdirected_request", "the absolute-form target names another host than the CONNECT target", {}};
        if (slash == std::string_view::npos) out.origin_form = "/";
        else if (rest[slash] == '/') out.origin_form = std::string(rest.substr(slash));
        else out.origin_form = "/" + std::string(rest.substr(slash));
        return out;
    }
    return {400, "bad_target", "the request target must be origin-form or https:// absolute-form", {}};
}

// Responses (downloads) are read in pieces of up to four TLS records.
constexpr std::size_t upstream_read_size = 64 * 1024;

class MitmSession {
public:
    MitmSession(ClientContext ctx, tcp::socket client, Authority dest)
        : ctx_(std::move(ctx)),
          rt_(*ctx_.rt),
          limits_(rt_.config.limits),
          dest_(std::move(dest)),
          client_(std::move(client), rt_.client_facing_tls),
          client_buf_(16384),
          upstream_buf_(upstream_read_size) {
        head_limits_ = request_head_limits(limits_);
        pool_key_ = UpstreamPool::key(ctx_.session_id, dest_.host, dest_.port);
    }
    ~MitmSession() { stop_lending(); }  // also when the frame goes without run() ending
    MitmSession(const MitmSession&) = delete;
    MitmSession& operator=(const MitmSession&) = delete;

    awaitable<void> run();

private:
    awaitable<bool> handshake();
    // Handles one request; false means close the client connection.
    awaitable<bool> serve_one();
    awaitable<bool> ensure_upstream(const Session& session, bool& reused, ExchangeResult& result);
    void drop_upstream();
    // Hands the upstream connection to the pool, or closes it when it cannot
    // serve another request; `client_stays` lends it (UpstreamPool::give).
    void release_upstream(bool client_stays);
    void stop_lending();
    void shed_idle_memory();
    awaitable<bool> wait_while_idle();
    awaitable<void> reply(std::string response);
    void log_request(const RequestHead& req, int status, const Binding* binding, std::string_view reason);

    ExchangeIo<tls_stream, tls_stream> exchange_io(const Session& session);

    ClientContext ctx_;
    Runtime& rt_;
    const Limits& limits_;
    Authority dest_;
    tls_stream client_;
    std::optional<tls_stream> upstream_;
    bool upstream_reusable_ = false;   // the last exchange left it ready for another request
    bool lending_ = false;             // counted as a lender by the thread's pool
    ReadBuffer client_buf_;
    ReadBuffer upstream_buf_;
    std::string write_buffer_;  // body pieces framed for the client or the origin (BodyWriter)
    HeadLimits head_limits_;
    std::string pool_key_;  // this session's upstream connections to dest_
    clock::time_point request_start_;
    std::uint64_t bytes_up_ = 0;
    std::uint64_t bytes_down_ = 0;
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

awaitable<void> MitmSession::reply(std::string response) {
    co_await write_all(client_, response, *ctx_.watchdog, limits_.idle_timeout);
}

void MitmSession::log_request(const RequestHead& req, int status, const Binding* binding, std::string_view reason) {
    auto e = access_entry(ctx_, "mitm", req.method, dest_, request_start_);
    if (binding && binding->vault) {
        e.vault = binding->vault->name;
        e.service = binding->service->id;
    }
    e.set_path(req.target.empty() ? std::string_view("/") : std::string_view(req.target));
    e.status = status;
    e.bytes_up = bytes_up_;
    e.bytes_down = bytes_down_;
    e.reason = std::string(reason);
    rt_.record(e);
}

awaitable<bool> MitmSession::handshake() {
    auto leaf = rt_.leaves->get(dest_.host);
    if (!leaf || !use_leaf(client_, *leaf, rt_.ca->chain_cert())) {
        log_warn("mitm: cannot use a leaf certificate for " + dest_.host + ": " + openssl_errors());
        co_return false;
    }
    ctx_.watchdog->arm(limits_.handshake_timeout);
    auto [ec] = co_await client_.async_handshake(ssl::stream_base::server, use_tuple);
    if (ec) {
        log_debug("mitm: client TLS handshake for " + dest_.host + " failed: " + ec.message());
        co_return false;
    }
    co_return true;
}

awaitable<bool> MitmSession::ensure_upstream(const Session& session, bool& reused, ExchangeResult& result) {
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
    tcp::socket socket(client_.get_executor());
    auto dialed = co_await dial_checked(rt_, session.policy, dest_, socket, *ctx_.watchdog);
    if (!dialed.ok()) {
        if (dialed.denied != DenyReason::none) {
            result.status = 403;
            result.reason = std::string(deny_reason_name(dialed.denied));
            co_await reply(denied_response(dialed.denied, dest_));
        } else if (dialed.timed_out) {
            result.status = 504;
            result.reason = "upstream_timeout";
            co_await reply(error_response(504, "upstream_timeout", "the bound origin did not answer in time", true));
        } else {
            result.status = 502;
            result.reason = "upstream_unreachable";
            co_await reply(error_response(502, "upstream_unreachable", "cannot connect to the bound origin", true));
        }
        co_return false;
    }
    upstream_.emplace(std::move(socket), rt_.upstream_tls);
    ctx_.watchdog->watch(upstream_->next_layer());
    result.status = 502;
    result.reason = "upstream_tls_failed";
    if (!expect_upstream_identity(*upstream_, dest_)) {
        drop_upstream();
        co_await reply(error_response(502, "upstream_tls_failed", "cannot set up TLS to the bound origin", true));
        co_return false;
    }
    ctx_.watchdog->arm(limits_.connect_timeout);
    auto [ec] = co_await upstream_->async_handshake(ssl::stream_base::client, use_tuple);
    if (ec) {
        bool timed_out = ctx_.watchdog->expired();
        long verify = SSL_get_verify_result(upstream_->native_handle());
        log_warn("mitm: TLS to " + format_authority(dest_) + " failed: " +
                 (verify != X509_V_OK ? std::string(X509_verify_cert_error_string(verify)) : ec.message()));
        drop_upstream();
        if (timed_out) {
            result.status = 504;
            result.reason = "upstream_timeout";
        }
        if (timed_out)
            co_await reply(error_response(504, "upstream_timeout", "the TLS handshake with the bound origin timed out", true));
        else
            co_await reply(error_response(502, "upstream_tls_failed",
                                          "the bound origin's certificate did not verify against upstream.ca_file",
                                          true));
        co_return false;
    }
    result.status = 0;
    result.reason.clear();
    co_return true;
}

awaitable<bool> MitmSession::serve_one() {
    RequestHead req;
    ParseResult parsed;
    HeadTimeouts timeouts{first_request_ ? limits_.header_timeout : limits_.idle_timeout, limits_.header_timeout};
    if (!first_request_ && client_buf_.empty()) timeouts.first_byte = limits_.header_timeout;  // waited in run()
    first_request_ = false;
    ctx_.watchdog->set_idle(client_buf_.empty());
    auto outcome = co_await read_head(client_, client_buf_, req, parse_request_head, head_limits_, *ctx_.watchdog,
                                      timeouts, parsed);
    ctx_.watchdog->set_idle(false);
    request_start_ = clock::now();
    bytes_up_ = bytes_down_ = 0;
    switch (outcome) {
    case HeadOutcome::ok: break;
    case HeadOutcome::invalid:
        co_await reply(error_response(parsed.http_status, "bad_request", parsed.reason, true));
        // A head that failed to parse is not logged field by field.
        log_request(RequestHead{}, parsed.http_status, nullptr, "invalid_request");
        co_return false;
    case HeadOutcome::timed_out:
        if (!client_buf_.empty()) {
            co_await reply(error_response(408, "request_timeout", "the request head did not arrive in time", true));
        }
        co_return false;
    default: co_return false;
    }

    auto framing = request_framing(req);
    if (!framing.framing) {
        co_await reply(error_response(400, "bad_framing", framing.reason, true));
        log_request(req, 400, nullptr, "bad_framing");
        co_return false;
    }
    auto target = check_target(req, dest_);
    if (target.status != 0) {
        co_await reply(error_response(target.status, target.code, target.message, true));
        log_request(req, target.status, nullptr, target.code);
        co_return false;
    }
    if (req.method == "TRACE" || req.method == "TRACK") {
        co_await reply(error_response(405, "method_not_allowed", "TRACE and TRACK are refused on bound hosts", true));
        log_request(req, 405, nullptr, "method_not_allowed");
        co_return false;
    }

    // The state current now: a rotated credential applies from this request on.
    auto state = rt_.snapshot();
    const Session* session = active_session(*state, ctx_.session_id);
    if (!session) {
        co_await reply(proxy_auth_required_response());
        log_request(req, 407, nullptr, "session_gone");
        co_return false;
    }
    auto chosen = state->binding_for_request(*session, dest_.host, dest_.port, path_of(target.origin_form));
    if (chosen.coverage == Coverage::unclear_path) {
        // Forwarded as it is, it might reach a covered path; the credential is never risked on it.
        co_await reply(denied_response(DenyReason::path_not_covered, dest_));
        log_request(req, 403, nullptr, "path_not_covered");
        co_return false;
    }
    if (chosen.coverage == Coverage::tied) {
        co_await reply(error_response(503, "binding_conflict",
                                      "two bound services of this session match the request equally", true));
        log_request(req, 503, nullptr, "binding_conflict");
        co_return false;
    }
    auto& binding = chosen.binding;
    if (binding && !binding->secret) {
        co_await reply(error_response(503, "credential_missing",
                                      "the vault has no value for this service's credential", true));
        log_request(req, 503, &*binding, "credential_missing");
        co_return false;
    }

    // Re-serialise from parsed fields: only end-to-end headers pass.
    auto tokens = connection_tokens(req.headers);
    ExchangeRequest exchange;
    exchange.framing = *framing.framing;
    const bool redact = binding && binding->service->config.redact_response;
    // A spliced WebSocket cannot be scanned, so redacted services get no upgrade.
    exchange.websocket = !redact && is_websocket_upgrade(req, tokens);
    std::optional<Redactor> redactor;
    if (redact && binding->service->redaction) {
        redactor.emplace(binding->service->redaction);
        exchange.redactor = &*redactor;
    } else if (redact) {
        co_await reply(error_response(502, "redaction_unavailable",
                                      "the credential also occurs in its redaction placeholder, so responses "
                                      "cannot be redacted",
                                      true));
        log_request(req, 502, &*binding, "redaction_unavailable");
        co_return false;
    }
    exchange.client_close = wants_close(req.headers, req.version_minor);
    // The outgoing head takes the client's headers over; the log line and the
    // response framing need only these fields of the request.
    RequestHead summary;
    summary.method = req.method;
    summary.target = req.target;
    summary.version_minor = req.version_minor;
    exchange.client_head = &summary;
    auto outgoing = build_outgoing_head(std::move(req), target.origin_form,
                                        format_authority(dest_, dest_.port != 443), exchange.framing,
                                        exchange.websocket, redact);
    if (outgoing.bad_expect) {
        co_await reply(error_response(417, "expectation_failed", "only 100-continue is supported", true));
        log_request(summary, 417, nullptr, "expectation_failed");
        co_return false;
    }
    exchange.expect_continue = outgoing.expect_continue;
    RequestHead& up = outgoing.head;
    if (binding) {
        bool injected = true;
        try {
            inject_credential(up, binding->service->config.auth, *binding->secret);
        } catch (const std::invalid_argument&) {
            injected = false;
        }
        if (injected) rt_.metrics.injection(binding->vault->name, binding->service->id);
        if (!injected) {
            // A credential with CR/LF/NUL would split the head: refuse, name nothing.
            for (auto& h : up.headers) wipe_string(h.value);
            co_await reply(error_response(502, "credential_unusable",
                                          "the vault's credential cannot be sent in an HTTP header", true));
            log_request(summary, 502, &*binding, "credential_unusable");
            co_return false;
        }
    }
    std::string wire = serialize_request_head(up);
    for (auto& h : up.headers) wipe_string(h.value);
    wipe_string(up.target);

    auto io = exchange_io(*session);
    ExchangeResult result;
    if (co_await send_request(io, wire, exchange, result))
        co_await relay_response(io, exchange, rt_.draining.load(std::memory_order_relaxed), result);
    bytes_up_ = result.bytes_up;
    bytes_down_ = result.bytes_down;
    upstream_reusable_ = upstream_.has_value() && result.keep_upstream;
    if (result.upstream_seconds > 0) rt_.metrics.upstream_latency(std::chrono::duration<double>(result.upstream_seconds));
    log_request(summary, result.status, binding ? &*binding : nullptr, result.reason);
    co_return result.keep_client;
}

ExchangeIo<tls_stream, tls_stream> MitmSession::exchange_io(const Session& session) {
    return ExchangeIo<tls_stream, tls_stream>{
        client_, client_buf_, upstream_, upstream_buf_, *ctx_.watchdog, limits_,
        [this, &session](bool& reused, ExchangeResult& r) { return ensure_upstream(session, reused, r); },
        [this] { drop_upstream(); }, "the bound origin", write_buffer_};
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

// Waits, between requests, for the client's next bytes (outside serve_one's
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
    if (co_await handshake()) {
        // A drain ends keep-alive connections after the request in flight.
        while (co_await serve_one() && !rt_.draining.load(std::memory_order_relaxed)) {
            // A pipelined request goes on at once, on the same upstream
            // connection. Otherwise the connection waits here, outside
            // serve_one's large frame, and its upstream connection waits in
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
