// The MITM request path: TLS to the client with a leaf for the CONNECT host,
// then, for each request on the connection: strict parsing, the Host check,
// injection, a verified TLS connection to the bound origin, and streaming of
// both bodies. Upstream connections belong to this client connection alone, so
// they are never shared between sessions.
#include "connection.hpp"
#include "dialer.hpp"
#include "http_io.hpp"
#include "proxy_responses.hpp"
#include "splice.hpp"
#include "tls_contexts.hpp"
#include "vaultgate/diag_log.hpp"
#include "vaultgate/inject.hpp"

#include <optional>

namespace vaultgate::net {

namespace {

std::string_view path_of(std::string_view target) {
    auto end = target.find_first_of("?#");
    return end == std::string_view::npos ? target : target.substr(0, end);
}

double ms_since(clock::time_point start) {
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

// Tokens of every Connection header, lower-cased.
std::vector<std::string> connection_options(const std::vector<Header>& headers) {
    std::vector<std::string> out;
    for (const auto& h : headers) {
        if (!iequals(h.name, "connection")) continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            auto comma = v.find(',');
            auto token = v.substr(0, comma);
            while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
            while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
            if (!token.empty()) {
                std::string t(token);
                for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                out.push_back(std::move(t));
            }
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return out;
}

bool listed_in(const std::vector<std::string>& options, std::string_view name) {
    for (const auto& o : options)
        if (iequals(o, name)) return true;
    return false;
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

class MitmSession {
public:
    MitmSession(ClientContext ctx, tcp::socket client, Authority dest)
        : ctx_(std::move(ctx)),
          rt_(*ctx_.rt),
          limits_(rt_.config.limits),
          dest_(std::move(dest)),
          client_(std::move(client), rt_.client_facing_tls),
          client_buf_(16384),
          upstream_buf_(16384) {
        head_limits_.max_head_bytes = limits_.header_bytes;
        head_limits_.max_header_count = limits_.header_count;
        head_limits_.max_request_line = std::min<std::size_t>(limits_.header_bytes, 16384);
    }

    awaitable<void> run();

private:
    awaitable<bool> handshake();
    // Handles one request; false means close the client connection.
    awaitable<bool> serve_one();
    awaitable<bool> ensure_upstream(const Session& session, bool& reused);
    void drop_upstream();
    awaitable<void> reply(std::string response);
    void log_request(const RequestHead& req, int status, const Binding* binding, std::string_view reason);

    template <class Sink>
    awaitable<BodyResult> forward_request_body(const BodyFraming& framing, Sink sink);

    ClientContext ctx_;
    Runtime& rt_;
    const Limits& limits_;
    Authority dest_;
    tls_stream client_;
    std::optional<tls_stream> upstream_;
    ReadBuffer client_buf_;
    ReadBuffer upstream_buf_;
    HeadLimits head_limits_;
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
    upstream_buf_ = ReadBuffer(16384);
}

awaitable<void> MitmSession::reply(std::string response) {
    co_await write_all(client_, response, *ctx_.watchdog, limits_.idle_timeout);
}

void MitmSession::log_request(const RequestHead& req, int status, const Binding* binding, std::string_view reason) {
    AccessLogEntry e;
    e.ts = std::chrono::system_clock::now();
    e.session = ctx_.session_id;
    if (binding && binding->vault) {
        e.vault = binding->vault->name;
        e.service = binding->service->id;
    }
    e.ingress = "mitm";
    e.method = req.method;
    e.host = dest_.host;
    e.port = dest_.port;
    e.set_path(req.target.empty() ? std::string_view("/") : std::string_view(req.target));
    e.status = status;
    e.bytes_up = bytes_up_;
    e.bytes_down = bytes_down_;
    e.ms = ms_since(request_start_);
    e.reason = std::string(reason);
    e.client = ctx_.client_ip;
    rt_.log->write(e);
}

awaitable<bool> MitmSession::handshake() {
    auto leaf = rt_.leaves->get(dest_.host);
    if (!leaf || !use_leaf(client_, *leaf)) {
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

awaitable<bool> MitmSession::ensure_upstream(const Session& session, bool& reused) {
    reused = upstream_.has_value();
    if (upstream_) co_return true;
    tcp::socket socket(client_.get_executor());
    auto dialed = co_await dial_checked(rt_, session.policy, dest_, socket, *ctx_.watchdog);
    if (!dialed.ok()) {
        if (dialed.denied != DenyReason::none) {
            co_await reply(denied_response(dialed.denied, dest_));
        } else if (dialed.timed_out) {
            co_await reply(error_response(504, "upstream_timeout", "the bound origin did not answer in time", true));
        } else {
            co_await reply(error_response(502, "upstream_unreachable", "cannot connect to the bound origin", true));
        }
        co_return false;
    }
    upstream_.emplace(std::move(socket), rt_.upstream_tls);
    ctx_.watchdog->watch(upstream_->next_layer());
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
        if (timed_out)
            co_await reply(error_response(504, "upstream_timeout", "the TLS handshake with the bound origin timed out", true));
        else
            co_await reply(error_response(502, "upstream_tls_failed",
                                          "the bound origin's certificate did not verify against upstream.ca_file",
                                          true));
        co_return false;
    }
    co_return true;
}

template <class Sink>
awaitable<BodyResult> MitmSession::forward_request_body(const BodyFraming& framing, Sink sink) {
    if (framing.kind == BodyKind::content_length)
        co_return co_await read_fixed_body(client_, client_buf_, framing.length, *ctx_.watchdog, limits_.idle_timeout,
                                           sink);
    if (framing.kind == BodyKind::chunked)
        co_return co_await read_chunked_body(client_, client_buf_, ChunkLimits{}, *ctx_.watchdog,
                                             limits_.idle_timeout, sink);
    co_return BodyResult{};
}

// Sends payload pieces to a stream, re-framed as chunks when `chunked`.
template <class Stream>
struct BodyWriter {
    Stream* stream;
    Watchdog* watchdog;
    clock::duration timeout;
    bool chunked;
    std::string frame;

    awaitable<error_code> operator()(std::string_view payload) {
        if (payload.empty()) co_return error_code{};
        if (!chunked) co_return co_await write_all(*stream, payload, *watchdog, timeout);
        frame.clear();
        append_chunk(frame, payload);
        co_return co_await write_all(*stream, frame, *watchdog, timeout);
    }
};

awaitable<bool> MitmSession::serve_one() {
    RequestHead req;
    ParseResult parsed;
    HeadTimeouts timeouts{first_request_ ? limits_.header_timeout : limits_.idle_timeout, limits_.header_timeout};
    first_request_ = false;
    auto outcome = co_await read_head(client_, client_buf_, req, parse_request_head, head_limits_, *ctx_.watchdog,
                                      timeouts, parsed);
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
    const Session* session = state->find_session(ctx_.session_id);
    if (!session) {
        co_await reply(proxy_auth_required_response());
        log_request(req, 407, nullptr, "session_gone");
        co_return false;
    }
    auto binding = state->binding_for_request(*session, dest_.host, dest_.port, path_of(target.origin_form));
    if (binding && !binding->secret) {
        co_await reply(error_response(503, "credential_missing",
                                      "the vault has no value for this service's credential", true));
        log_request(req, 503, &*binding, "credential_missing");
        co_return false;
    }

    // Re-serialise from parsed fields: only end-to-end headers pass.
    auto options = connection_options(req.headers);
    bool websocket = is_websocket_upgrade(req, options);
    bool client_close = wants_close(req.headers, req.version_minor);
    bool expect_continue = false;
    RequestHead up;
    up.method = req.method;
    up.target = target.origin_form;
    up.version_minor = 1;
    up.headers.reserve(req.headers.size() + 2);
    for (auto& h : req.headers) {
        if (is_hop_by_hop(h.name) || listed_in(options, h.name) || iequals(h.name, "content-length") ||
            iequals(h.name, "host"))
            continue;
        if (iequals(h.name, "expect")) {
            if (!iequals(h.value, "100-continue")) {
                co_await reply(error_response(417, "expectation_failed", "only 100-continue is supported", true));
                log_request(req, 417, nullptr, "expectation_failed");
                co_return false;
            }
            expect_continue = true;
            continue;
        }
        if (binding && binding->service->config.redact_response && iequals(h.name, "accept-encoding")) continue;
        up.headers.push_back(std::move(h));
    }
    up.headers.insert(up.headers.begin(), Header{"Host", format_authority(dest_, dest_.port != 443)});
    if (framing.framing->kind == BodyKind::content_length)
        up.headers.push_back({"Content-Length", std::to_string(framing.framing->length)});
    else if (framing.framing->kind == BodyKind::chunked)
        up.headers.push_back({"Transfer-Encoding", "chunked"});
    if (websocket) {
        up.headers.push_back({"Connection", "Upgrade"});
        up.headers.push_back({"Upgrade", std::string(*req.get("upgrade"))});
    }
    if (binding) inject_credential(up, binding->service->config.auth, *binding->secret);
    std::string wire = serialize_request_head(up);
    for (auto& h : up.headers) wipe_string(h.value);
    if (binding && binding->service->config.auth.type == AuthType::query) wipe_string(up.target);

    bool has_body = framing.framing->kind != BodyKind::none;
    // A chunked body that is already malformed in what arrived with the head is
    // refused before anything is sent: the origin then sees no bytes at all.
    if (framing.framing->kind == BodyKind::chunked && !client_buf_.empty()) {
        ChunkedDecoder probe;
        std::string scratch;
        if (probe.feed(client_buf_.view(), scratch).status == ChunkedDecoder::Status::error) {
            wipe_string(wire);
            co_await reply(error_response(400, "bad_chunked_body", probe.error(), true));
            log_request(req, 400, binding ? &*binding : nullptr, "bad_chunked_body");
            co_return false;
        }
    }
    bool reused = false;
    error_code write_error;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!co_await ensure_upstream(*session, reused)) {
            wipe_string(wire);
            log_request(req, 502, binding ? &*binding : nullptr, "upstream_failed");
            co_return false;
        }
        write_error = co_await write_all(*upstream_, wire, *ctx_.watchdog, limits_.idle_timeout);
        // A pooled connection the origin closed while idle fails on first use;
        // nothing was delivered, so one retry on a fresh connection is safe.
        if (write_error && reused) {
            drop_upstream();
            continue;
        }
        break;
    }
    wipe_string(wire);
    if (write_error) {
        drop_upstream();
        co_await reply(error_response(502, "upstream_write_failed", "the bound origin closed the connection", true));
        log_request(req, 502, binding ? &*binding : nullptr, "upstream_write_failed");
        co_return false;
    }

    if (expect_continue && has_body) {
        co_await reply("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (has_body) {
        BodyWriter<tls_stream> writer{&*upstream_, ctx_.watchdog.get(), limits_.idle_timeout,
                                      framing.framing->kind == BodyKind::chunked, {}};
        auto body = co_await forward_request_body(*framing.framing, std::ref(writer));
        bytes_up_ = body.bytes;
        if (body.outcome != BodyOutcome::ok) {
            // Abort without the final chunk: the origin never sees a complete request.
            drop_upstream();
            if (body.outcome == BodyOutcome::invalid) {
                co_await reply(error_response(400, "bad_chunked_body", body.error, true));
                log_request(req, 400, binding ? &*binding : nullptr, "bad_chunked_body");
            } else if (body.outcome == BodyOutcome::timed_out) {
                co_await reply(error_response(408, "request_timeout", "the request body stalled", true));
                log_request(req, 408, binding ? &*binding : nullptr, "request_timeout");
            } else {
                log_request(req, 0, binding ? &*binding : nullptr, "client_aborted");
            }
            co_return false;
        }
        if (framing.framing->kind == BodyKind::chunked) {
            if (co_await write_all(*upstream_, last_chunk, *ctx_.watchdog, limits_.idle_timeout)) {
                drop_upstream();
                co_await reply(error_response(502, "upstream_write_failed", "the bound origin closed the connection", true));
                log_request(req, 502, binding ? &*binding : nullptr, "upstream_write_failed");
                co_return false;
            }
        }
    }

    // Response head; informational 100s are ours to send, so they are dropped.
    ResponseHead resp;
    for (;;) {
        ParseResult rparsed;
        auto rout = co_await read_head(*upstream_, upstream_buf_, resp, parse_response_head, HeadLimits{},
                                       *ctx_.watchdog, {limits_.response_timeout, limits_.response_timeout}, rparsed);
        if (rout != HeadOutcome::ok) {
            bool timed_out = rout == HeadOutcome::timed_out;
            drop_upstream();
            if (timed_out)
                co_await reply(error_response(504, "upstream_timeout", "the bound origin did not answer in time", true));
            else
                co_await reply(error_response(502, "bad_upstream_response",
                                              "the bound origin sent no valid HTTP response", true));
            log_request(req, timed_out ? 504 : 502, binding ? &*binding : nullptr, "bad_upstream_response");
            co_return false;
        }
        if (resp.status >= 100 && resp.status < 200 && resp.status != 101) {
            if (resp.status != 100) {
                ResponseHead info = resp;
                std::erase_if(info.headers, [](const Header& h) { return is_hop_by_hop(h.name); });
                co_await reply(serialize_response_head(info));
            }
            resp = ResponseHead{};
            continue;
        }
        break;
    }

    if (resp.status == 101) {
        if (!websocket) {
            drop_upstream();
            co_await reply(error_response(502, "bad_upstream_response", "unexpected protocol switch", true));
            log_request(req, 502, binding ? &*binding : nullptr, "unexpected_101");
            co_return false;
        }
        ResponseHead out = resp;
        auto resp_options = connection_options(resp.headers);
        std::erase_if(out.headers, [&](const Header& h) { return is_hop_by_hop(h.name) || listed_in(resp_options, h.name); });
        out.headers.push_back({"Connection", "Upgrade"});
        if (auto u = resp.get("upgrade")) out.headers.push_back({"Upgrade", std::string(*u)});
        co_await reply(serialize_response_head(out));
        log_request(req, 101, binding ? &*binding : nullptr, "");
        // Bytes already buffered on either side go first, then the streams are spliced.
        if (!upstream_buf_.empty()) co_await write_all(client_, upstream_buf_.view(), *ctx_.watchdog, limits_.idle_timeout);
        if (!client_buf_.empty()) co_await write_all(*upstream_, client_buf_.view(), *ctx_.watchdog, limits_.idle_timeout);
        SpliceCounters counters;
        co_await splice(client_, *upstream_, *ctx_.watchdog, limits_.idle_timeout, counters, 16384);
        drop_upstream();
        co_return false;
    }

    auto rframing = response_framing(resp, req.method);
    if (!rframing.framing) {
        drop_upstream();
        co_await reply(error_response(502, "bad_upstream_response", "the bound origin's response framing is invalid", true));
        log_request(req, 502, binding ? &*binding : nullptr, "bad_upstream_framing");
        co_return false;
    }
    const auto& rf = *rframing.framing;
    bool upstream_close = rf.kind == BodyKind::until_close || wants_close(resp.headers, resp.version_minor);
    bool client_http10 = req.version_minor == 0;
    bool rechunk = rf.kind == BodyKind::chunked || (rf.kind == BodyKind::until_close && !client_http10);
    bool close_after = client_close || (rf.kind == BodyKind::until_close && client_http10) ||
                       rt_.draining.load(std::memory_order_relaxed);

    ResponseHead out;
    out.version_minor = 1;
    out.status = resp.status;
    out.reason = resp.reason;
    auto resp_options = connection_options(resp.headers);
    out.headers.reserve(resp.headers.size() + 2);
    for (auto& h : resp.headers) {
        if (is_hop_by_hop(h.name) || listed_in(resp_options, h.name) || iequals(h.name, "content-length")) continue;
        out.headers.push_back(std::move(h));
    }
    if (rf.kind == BodyKind::content_length) out.headers.push_back({"Content-Length", std::to_string(rf.length)});
    else if (rechunk) out.headers.push_back({"Transfer-Encoding", "chunked"});
    if (close_after) out.headers.push_back({"Connection", "close"});
    if (auto ec = co_await write_all(client_, serialize_response_head(out), *ctx_.watchdog, limits_.idle_timeout)) {
        drop_upstream();
        log_request(req, resp.status, binding ? &*binding : nullptr, "client_gone");
        co_return false;
    }

    BodyWriter<tls_stream> to_client{&client_, ctx_.watchdog.get(), limits_.idle_timeout, rechunk, {}};
    BodyResult body;
    if (rf.kind == BodyKind::content_length)
        body = co_await read_fixed_body(*upstream_, upstream_buf_, rf.length, *ctx_.watchdog, limits_.response_timeout,
                                        std::ref(to_client));
    else if (rf.kind == BodyKind::chunked)
        body = co_await read_chunked_body(*upstream_, upstream_buf_, ChunkLimits{}, *ctx_.watchdog,
                                          limits_.response_timeout, std::ref(to_client));
    else if (rf.kind == BodyKind::until_close)
        body = co_await read_until_close(*upstream_, upstream_buf_, *ctx_.watchdog, limits_.response_timeout,
                                         std::ref(to_client));
    bytes_down_ = body.bytes;
    if (body.outcome != BodyOutcome::ok) {
        // The client has a partial response; closing is the only honest signal left.
        drop_upstream();
        log_request(req, resp.status, binding ? &*binding : nullptr, "response_truncated");
        co_return false;
    }
    if (rechunk) {
        if (co_await write_all(client_, last_chunk, *ctx_.watchdog, limits_.idle_timeout)) {
            drop_upstream();
            log_request(req, resp.status, binding ? &*binding : nullptr, "client_gone");
            co_return false;
        }
    }
    if (upstream_close) drop_upstream();
    log_request(req, resp.status, binding ? &*binding : nullptr, "");
    co_return !close_after;
}

awaitable<void> MitmSession::run() {
    ctx_.watchdog->watch(client_.next_layer());
    if (co_await handshake()) {
        while (co_await serve_one()) {
            if (client_buf_.empty()) client_buf_.release_if_empty();
        }
        // No close_notify exchange: every response the proxy sends is framed, so
        // the client cannot mistake the close for the end of a body, and waiting
        // for the peer's close_notify would hold the connection open for nothing.
    }
    drop_upstream();
    ctx_.watchdog->stop();
    error_code ignored;
    client_.next_layer().close(ignored);
}

}  // namespace

awaitable<void> run_mitm(ClientContext ctx, tcp::socket client, Authority dest) {
    MitmSession session(std::move(ctx), std::move(client), std::move(dest));
    co_await session.run();
}

}  // namespace vaultgate::net
