// The explicit proxy listener's side of a connection: read the first request
// (CONNECT or absolute-form), find the session, decide mitm / tunnel / denied,
// and hand over. Nothing the client sends after a refused request is read, so
// pipelined bytes never reach anyone.
#include "net/io/hello_peek.hpp"
#include "net/io/http_io.hpp"
#include "net/io/splice.hpp"
#include "net/proxy/connection.hpp"
#include "net/proxy/pipeline.hpp"
#include "net/proxy/session_auth.hpp"
#include "net/upstream/dialer.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <optional>

namespace vaultgate::net {

namespace {

constexpr std::string_view connection_established = "HTTP/1.1 200 Connection established\r\n\r\n";

// A refusal of the connection's first request, answered in HTTP and logged at `site`.
awaitable<void> refuse(ClientContext& ctx, tcp::socket& client, const RefusalSite& site, const Refusal& refusal) {
    co_await answer_refusal(ctx, site, refusal, HttpRefusalReply{ctx, client});
}

// Handles a CONNECT up to the point where the connection becomes a tunnel or
// a MITM'd connection; refusals and failures are answered here (done).
awaitable<ConnectionPhase> handle_connect(ClientContext& ctx, tcp::socket& client, ReadBuffer& buf,
                                          const RequestHead& req, const Session& session, const GatewayState& state,
                                          clock::time_point start) {
    ConnectionPhase next;
    auto parsed = parse_authority(req.target, 0);
    if (!parsed) {
        co_await refuse(ctx, client, {"denied", "CONNECT", no_destination(), start},
                        refusal(400, "bad_authority",
                                std::string("CONNECT target: ") + std::string(host_error_text(parsed.error))));
        co_return next;
    }
    Authority dest = *parsed.authority;
    auto route = state.route(session, dest, EgressKind::connect);

    if (route.kind == RouteKind::denied) {
        co_await refuse(ctx, client, {"denied", "CONNECT", dest, start}, denial(route.reason, &session.policy));
        co_return next;
    }
    if (route.kind == RouteKind::mitm) {
        // The TLS handshake must start after our 200; bytes sent before it would
        // be a ClientHello we cannot hand to the TLS layer.
        if (!buf.empty()) {
            co_await refuse(ctx, client, {"denied", "CONNECT", dest, start},
                            unlogged(refusal(400, "early_data", "send the TLS handshake after the 200 response")));
            co_return next;
        }
        if (co_await write_all(client, connection_established, *ctx.watchdog, ctx.settings->limits.idle_timeout))
            co_return next;
        ctx.watchdog->unwatch(client);  // the TLS stream takes the socket over
        next.kind = ConnectionPhase::Kind::mitm;
        next.dest = dest;
        co_return next;
    }

    tcp::socket upstream(client.get_executor());
    auto dialed = co_await dial_checked(*ctx.rt, *ctx.settings, session.policy, dest, upstream, *ctx.watchdog);
    if (dialed.denied != DenyReason::none) {
        co_await refuse(ctx, client, {"denied", "CONNECT", dest, start}, denial(dialed.denied, &session.policy));
        co_return next;
    }
    if (!dialed.ok()) {
        co_await refuse(ctx, client, {"tunnel", "CONNECT", dest, start},
                        dial_failure(*ctx.rt, dest, dialed, "the destination"));
        co_return next;
    }
    if (co_await write_all(client, connection_established, *ctx.watchdog, ctx.settings->limits.idle_timeout))
        co_return next;
    next.kind = ConnectionPhase::Kind::tunnel;
    next.dest = dest;
    next.upstream.emplace(std::move(upstream));
    next.leftover.assign(buf.view());
    if (session.policy.tunnel_sni_check) next.sni_policy = session.policy;
    co_return next;
}

enum class FirstBytes { pass, refused, ended };

// Waits for the client's first bytes in a tunnel and judges the ClientHello
// they may start (check_tunnel_sni); nothing has gone upstream yet. Until the
// first byte the idle timeout applies (in some protocols the server speaks
// first, and it may already be doing so); from it, the hello has handshake_timeout.
awaitable<FirstBytes> judge_first_bytes(ClientContext& ctx, tcp::socket& client, const Authority& dest,
                                        const EgressPolicy& policy, std::string_view leftover,
                                        clock::time_point start) {
    const auto& limits = ctx.settings->limits;
    if (leftover.empty() && !readable_now(client)) {
        ctx.watchdog->arm(limits.idle_timeout);
        auto [ec] = co_await client.async_wait(tcp::socket::wait_read, use_tuple);
        if (ec) co_return FirstBytes::ended;
    }
    const auto peeked =
        co_await peek_client_hello(client, leftover, *ctx.watchdog, limits.handshake_timeout, ctx.rt->metrics);
    if (peeked.hello.status == HelloStatus::incomplete && !peeked.timed_out) co_return FirstBytes::ended;
    const DenyReason reason = check_tunnel_sni(policy, dest, peeked.hello);
    if (reason == DenyReason::none) co_return FirstBytes::pass;
    // Told by the tunnel's end alone: the client already has its 200.
    auto no_reply = [](const Refusal&, const Authority&) -> awaitable<void> { co_return; };
    co_await answer_refusal(ctx, {"denied", "CONNECT", dest, start}, denial(reason, &policy), no_reply);
    co_return FirstBytes::refused;
}

}  // namespace

awaitable<void> run_tunnel(ClientContext& ctx, tcp::socket& client, tcp::socket& upstream, const Authority& dest,
                           std::string leftover, const EgressPolicy* sni_policy) {
    using namespace asio::experimental::awaitable_operators;
    auto start = clock::now();
    auto& wd = *ctx.watchdog;
    const auto idle = ctx.settings->limits.idle_timeout;
    wd.watch(upstream);
    SpliceCounters counters;
    bool refused = false;
    // The origin's bytes flow from the start; the client's only once judged.
    auto client_to_upstream = [&]() -> awaitable<void> {
        const FirstBytes first =
            sni_policy ? co_await judge_first_bytes(ctx, client, dest, *sni_policy, leftover, start) : FirstBytes::pass;
        refused = first == FirstBytes::refused;
        bool ok = first == FirstBytes::pass;
        if (ok && !leftover.empty()) {
            ok = !co_await write_all(upstream, leftover, wd, idle);
            counters.up += leftover.size();
        }
        if (ok) co_await detail::pump(client, upstream, counters.up, wd, idle, splice_buffer_bytes);
        // Closed rather than cancelled: the other direction may not have started its read yet.
        else {
            error_code ignored;
            upstream.close(ignored);
        }
    };
    co_await (client_to_upstream() && detail::pump(upstream, client, counters.down, wd, idle, splice_buffer_bytes));
    if (refused) {
        wd.unwatch(upstream);
        co_return;
    }
    auto e = access_entry(ctx, "tunnel", "CONNECT", dest, start);
    e.status = 200;
    e.bytes_up = counters.up;
    e.bytes_down = counters.down;
    ctx.rt->record(e);
    wd.unwatch(upstream);
    error_code ignored;
    upstream.close(ignored);
}

double ms_since(clock::time_point start) {
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

AccessLogEntry access_entry(const ClientContext& ctx, std::string_view ingress, std::string_view method,
                            const Authority& dest, clock::time_point start) {
    AccessLogEntry e;
    e.ts = std::chrono::system_clock::now();
    e.session = ctx.session_id;
    e.ingress = std::string(ingress);
    e.method = std::string(method);
    e.host = dest.host;
    e.port = dest.port;
    e.ms = ms_since(start);
    e.client = ctx.client_ip;
    return e;
}

void record_request(const ClientContext& ctx, std::string_view ingress, const Authority& dest, clock::time_point start,
                    const RequestLine& line, std::string_view proto) {
    std::string_view method;
    std::string_view target;
    if (line.request) {
        method = line.request->method;
        target = line.request->target;
    }
    auto e = access_entry(ctx, ingress, method, dest, start);
    if (line.binding && line.binding->vault) {
        e.vault = line.binding->vault->name;
        e.service = line.binding->service->id;
    }
    e.credential = std::string(line.credential);
    e.set_path(target.empty() ? std::string_view("/") : target);
    e.status = line.status;
    e.bytes_up = line.bytes_up;
    e.bytes_down = line.bytes_down;
    e.reason = std::string(line.reason);
    e.proto = std::string(proto);
    ctx.rt->record(e);
}

ClientContext make_client_context(std::shared_ptr<Runtime> rt, tcp::socket& client, std::string client_ip) {
    ClientContext ctx;
    ctx.settings = rt->settings();
    ctx.rt = std::move(rt);
    ctx.watchdog = std::make_shared<Watchdog>(client.get_executor());
    ctx.watchdog->start();
    ctx.watchdog->watch(client);
    ctx.client_ip = std::move(client_ip);
    error_code ec;
    client.set_option(tcp::no_delay(true), ec);
    // Set once here, before the first asynchronous operation would set it
    // and TlsSocket again (one ioctl instead of two).
    client.non_blocking(true, ec);
    return ctx;
}

namespace {

// Reads the connection's first request and answers it, or hands the
// connection on (ConnectionPhase). An idle tunnel or MITM'd connection does
// not keep this frame (its read buffer, parsed head and state snapshot).
awaitable<ConnectionPhase> serve_first_request(ClientContext& ctx, tcp::socket& client, clock::time_point start) {
    ConnectionPhase next;
    auto& rt = ctx.rt;
    const auto& limits = ctx.settings->limits;
    const HeadLimits head_limits = request_head_limits(limits);

    ReadBuffer buf(4096);
    RequestHead req;
    ParseResult parsed;
    auto outcome = co_await read_head(client, buf, req, parse_request_head, head_limits, *ctx.watchdog,
                                      {limits.handshake_timeout, limits.handshake_timeout}, parsed);
    if (outcome == HeadOutcome::invalid) {
        co_await refuse(ctx, client, malformed_site(start),
                        refusal(parsed.http_status, "bad_request", parsed.reason, "malformed_request"));
        co_return next;
    }
    if (outcome == HeadOutcome::timed_out && !buf.empty()) {
        co_await refuse(ctx, client, malformed_site(start),
                        unlogged(refusal(408, "request_timeout", "the request did not arrive in time")));
        co_return next;
    }
    if (outcome != HeadOutcome::ok) co_return next;
    if (is_own_connection(*rt, client)) {
        // vaultgate looping back to itself: no session, the default one least of all.
        error_code ec;
        const Authority self = to_authority(client.local_endpoint(ec));
        co_await refuse(ctx, client, {"denied", req.method, self, start}, denial(DenyReason::self_connection));
        co_return next;
    }

    std::shared_ptr<const GatewayState> state = rt->snapshot();
    auto auth = authenticate_session(*state, req, ctx.client_ip, rt->removed_sessions);
    if (!auth.session) {
        // The log says why, with the id named and the destination; the reply does not.
        const std::optional<Authority> wanted = first_request_destination(req);
        const Authority& dest = wanted ? *wanted : no_destination();
        ctx.session_id = std::move(auth.named_id);
        co_await refuse(ctx, client, {"denied", req.method, dest, start}, proxy_auth_refusal(auth.reason));
        co_return next;
    }
    ctx.session_id = auth.session->id;
    rt->connections.add(ctx.session_id, ctx.watchdog);
    if (req.method == "CONNECT") {
        next = co_await handle_connect(ctx, client, buf, req, *auth.session, *state, start);
    } else {
        co_await handle_plain_http(ctx, client, buf, std::move(req), state, start);
    }
    next.session_registered = true;
    co_return next;
}

}  // namespace

awaitable<void> run_connection_phase(ClientContext& ctx, tcp::socket& client, ConnectionPhase next) {
    if (next.kind == ConnectionPhase::Kind::mitm) {
        co_await run_mitm(ctx, std::move(client), std::move(next.dest));
    } else if (next.kind == ConnectionPhase::Kind::tunnel) {
        co_await run_tunnel(ctx, client, *next.upstream, next.dest, std::move(next.leftover),
                            next.sni_policy ? &*next.sni_policy : nullptr);
    }
    if (next.session_registered) ctx.rt->connections.remove(ctx.session_id, ctx.watchdog);
    error_code ignored;
    client.close(ignored);
}

awaitable<void> handle_proxy_client(std::shared_ptr<Runtime> rt, tcp::socket client, std::string client_ip) {
    ClientContext ctx = make_client_context(std::move(rt), client, std::move(client_ip));
    WatchdogStop stop_watchdog(ctx.watchdog);
    ConnectionPhase next = co_await serve_first_request(ctx, client, clock::now());
    co_await run_connection_phase(ctx, client, std::move(next));
}

}  // namespace vaultgate::net
