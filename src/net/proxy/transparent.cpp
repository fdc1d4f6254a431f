// Transparent mode: TLS connections redirected to listen.transparent by
// nftables/iptables (REDIRECT or DNAT). The original destination comes from
// SO_ORIGINAL_DST, the host from the ClientHello's SNI (read without consuming
// it), and the session from the client's source address. The decision is the
// CONNECT one: bound -> MITM, allowed -> tunnel to the original destination
// (only if the SNI name really resolves to it), otherwise a TLS alert.
#include "net/io/hello_peek.hpp"
#include "net/io/http_io.hpp"
#include "net/io/splice.hpp"
#include "net/proxy/connection.hpp"
#include "net/proxy/pipeline.hpp"
#include "net/proxy/session_auth.hpp"
#include "net/upstream/dialer.hpp"
#include "vaultgate/egress/client_hello.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <span>

namespace vaultgate::net {

namespace {

std::optional<tcp::endpoint> original_destination(tcp::socket& socket) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = socket.native_handle();
    bool v6 = socket.local_endpoint().address().is_v6();
    int rc = v6 ? ::getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &addr, &len)
                : ::getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &addr, &len);
    if (rc != 0) return std::nullopt;
    // The kernel fills in the address but leaves `len` as passed in.
    len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    tcp::endpoint ep;
    if (len > ep.capacity()) return std::nullopt;
    std::memcpy(ep.data(), &addr, len);
    ep.resize(len);
    return ep;
}

// Fatal TLS alerts in a plaintext record: the client's TLS stack reports a
// refusal (access_denied) or a failure (internal_error) instead of a reset.
constexpr unsigned char access_denied_alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31};
constexpr unsigned char internal_error_alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50};

// Sends the alert and closes gracefully. The peeked ClientHello is read first
// and the client's close awaited (at most 2 s): closing a socket with unread
// bytes sends a reset, which can destroy the alert before the client reads it.
awaitable<void> send_alert_and_close(ClientContext& ctx, tcp::socket& client, std::span<const unsigned char> alert) {
    ctx.watchdog->arm(std::chrono::seconds(2));
    char sink[4096];
    for (std::size_t drained = 0; drained < 64 * 1024;) {
        const ssize_t n = ::recv(client.native_handle(), sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0) break;
        drained += static_cast<std::size_t>(n);
    }
    auto [wec, written] = co_await asio::async_write(client, asio::buffer(alert.data(), alert.size()), use_tuple);
    if (wec) co_return;
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
    for (;;) {
        auto [rec, n] = co_await client.async_read_some(asio::buffer(sink), use_tuple);
        if (rec || ctx.watchdog->expired()) co_return;
    }
}

// The reply of answer_refusal on this listener before any TLS: an alert, not HTTP.
struct TlsAlertReply {
    ClientContext& ctx;
    tcp::socket& client;
    awaitable<void> operator()(const Refusal& refusal, const Authority&) const {
        if (refusal.status == 403) return send_alert_and_close(ctx, client, access_denied_alert);
        return send_alert_and_close(ctx, client, internal_error_alert);
    }
};

// A refused redirected connection, logged like a CONNECT (method "TLS") and told by an alert.
awaitable<void> refuse_tls(ClientContext& ctx, tcp::socket& client, std::string_view ingress, const Authority& dest,
                           clock::time_point start, const Refusal& refusal) {
    co_await answer_refusal(ctx, {ingress, "TLS", dest, start}, refusal, TlsAlertReply{ctx, client});
}

awaitable<void> refuse_tls(ClientContext& ctx, tcp::socket& client, DenyReason reason, const Authority& dest,
                           clock::time_point start) {
    co_await refuse_tls(ctx, client, "denied", dest, start, denial(reason));
}

// Plain HTTP redirected to the transparent listener (port 80): the Host header
// names the destination, the plain-http policy decides, and the request goes
// only to the original destination, never with a credential.
awaitable<void> serve_transparent_http(ClientContext& ctx, tcp::socket& client, const tcp::endpoint& original,
                                       std::shared_ptr<const GatewayState> state, clock::time_point start) {
    const auto& limits = ctx.settings->limits;
    const HeadLimits head_limits = request_head_limits(limits);
    ReadBuffer buf(4096);
    RequestHead req;
    ParseResult parsed;
    auto outcome = co_await read_head(client, buf, req, parse_request_head, head_limits, *ctx.watchdog,
                                      {limits.header_timeout, limits.header_timeout}, parsed);
    // These two are answered, not logged; the connection closes without a half-close first.
    const HttpRefusalReply reply{ctx, client, false};
    if (outcome != HeadOutcome::ok) {
        if (outcome == HeadOutcome::invalid) {
            co_await answer_refusal(ctx, malformed_site(start),
                                    unlogged(refusal(parsed.http_status, "bad_request", parsed.reason)), reply);
        }
        co_return;
    }
    auto host = req.get("host");
    auto authority = host ? parse_authority(*host, original.port()) : AuthorityResult{};
    if (req.count("host") != 1 || !authority || req.target.empty() || req.target.front() != '/') {
        co_await answer_refusal(
            ctx, malformed_site(start),
            unlogged(refusal(400, "bad_request", "a request needs one valid Host and an origin-form target")), reply);
        co_return;
    }
    // From here it is the explicit proxy's absolute-form request.
    req.target = "http://" + format_authority(*authority.authority) + req.target;
    ctx.rt->connections.add(ctx.session_id, ctx.watchdog);
    co_await handle_plain_http(ctx, client, buf, std::move(req), std::move(state), start, original);
    ctx.rt->connections.remove(ctx.session_id, ctx.watchdog);
}

}  // namespace

namespace {

// Decides what a redirected connection is by its source, original destination
// and ClientHello, and answers refusals and plain HTTP here. A tunnel or a MITM
// phase is handed back (ConnectionPhase), so it does not keep this frame and
// its state snapshot.
awaitable<ConnectionPhase> route_transparent(ClientContext& ctx, tcp::socket& client, clock::time_point start) {
    ConnectionPhase next;
    auto& rt = ctx.rt;
    auto state = rt->snapshot();
    const Session* session = session_for_source(*state, ctx.client_ip);
    auto original = original_destination(client);
    Authority dest;
    if (original) {
        dest.port = original->port();
        dest.host = original->address().to_string();
        dest.kind = original->address().is_v6() ? HostKind::ipv6 : HostKind::ipv4;
    }
    if (session) ctx.session_id = session->id;

    const auto peeked =
        co_await peek_client_hello(client, {}, *ctx.watchdog, ctx.settings->limits.handshake_timeout, rt->metrics);
    const HelloResult& hello = peeked.hello;
    if (is_own_connection(*rt, client, original)) {
        ctx.session_id.clear();  // vaultgate looping back to itself: no session applies
        co_await refuse_tls(ctx, client, DenyReason::self_connection, dest, start);
        co_return next;
    }
    if (session && original && hello.status == HelloStatus::not_tls && !is_self_endpoint(*rt, *original)) {
        co_await serve_transparent_http(ctx, client, *original, state, start);
        co_return next;
    }
    if (!session) {
        co_await refuse_tls(ctx, client, DenyReason::session_required, dest, start);
        co_return next;
    }
    if (!original) {
        co_await refuse_tls(ctx, client, DenyReason::self_connection, dest, start);
        co_return next;
    }
    auto name = hello.status == HelloStatus::ok ? normalize_host(hello.server_name) : HostResult{};
    if (!name || name.kind != HostKind::name) {
        co_await refuse_tls(ctx, client, DenyReason::no_server_name, dest, start);
        co_return next;
    }
    if (is_self_endpoint(*rt, *original)) {
        // Not redirected at all: someone connected to the listener itself.
        co_await refuse_tls(ctx, client, DenyReason::self_connection, dest, start);
        co_return next;
    }
    Authority by_name{*name.host, original->port(), HostKind::name};
    auto route = state->route(*session, by_name, EgressKind::connect);
    rt->connections.add(ctx.session_id, ctx.watchdog);
    next.session_registered = true;
    if (route.kind == RouteKind::denied) {
        co_await refuse_tls(ctx, client, route.reason, by_name, start);
        co_return next;
    }
    if (route.kind == RouteKind::mitm) {
        // The bound origin is reached by name, through the usual checks; the
        // client's TLS handshake is still unread in the socket.
        ctx.watchdog->unwatch(client);
        next.kind = ConnectionPhase::Kind::mitm;
        next.dest = by_name;
        co_return next;
    }
    tcp::socket upstream(client.get_executor());
    auto dialed =
        co_await dial_checked(*rt, *ctx.settings, session->policy, by_name, upstream, *ctx.watchdog, *original);
    if (dialed.denied != DenyReason::none) {
        co_await refuse_tls(ctx, client, dialed.denied, by_name, start);
    } else if (dialed.ok()) {
        next.kind = ConnectionPhase::Kind::tunnel;
        next.dest = by_name;
        next.upstream.emplace(std::move(upstream));
    } else {
        // As for CONNECT: logged, and the client is told rather than reset.
        co_await refuse_tls(ctx, client, "tunnel", by_name, start,
                            dial_failure(*rt, by_name, dialed, "the destination"));
    }
    co_return next;
}

}  // namespace

awaitable<void> handle_transparent_client(std::shared_ptr<Runtime> rt, tcp::socket client, std::string client_ip) {
    ClientContext ctx = make_client_context(std::move(rt), client, std::move(client_ip));
    WatchdogStop stop_watchdog(ctx.watchdog);
    ConnectionPhase next = co_await route_transparent(ctx, client, clock::now());
    co_await run_connection_phase(ctx, client, std::move(next));
}

}  // namespace vaultgate::net
