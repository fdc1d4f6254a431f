// Absolute-form http:// requests: forwarded in the clear when the session's
// policy allows plain HTTP to the host, never with a credential (a secret only
// travels over verified TLS). One request per client connection: the answer
// carries Connection: close, so a later request to another host starts fresh.
#include "net/proxy/plain_http.hpp"

#include "net/upstream/dialer.hpp"
#include "net/proxy/exchange.hpp"
#include "net/io/http_io.hpp"
#include "net/proxy/proxy_responses.hpp"

namespace vaultgate::net {

namespace {

// Splits "http://authority/path?q" into the authority and the origin-form rest.
bool split_http_url(std::string_view target, std::string_view& authority, std::string& origin_form) {
    constexpr std::string_view scheme = "http://";
    if (target.size() <= scheme.size() || !iequals(target.substr(0, scheme.size()), scheme)) return false;
    auto rest = target.substr(scheme.size());
    auto end = rest.find_first_of("/?#");
    authority = rest.substr(0, end);
    if (end == std::string_view::npos) origin_form = "/";
    else if (rest[end] == '/') origin_form = std::string(rest.substr(end));
    else if (rest[end] == '?') origin_form = "/" + std::string(rest.substr(end));
    else origin_form = "/";  // a fragment is not sent
    if (auto hash = origin_form.find('#'); hash != std::string::npos) origin_form.resize(hash);
    // Userinfo ("http://allowed@evil/") is refused: it only ever confuses readers.
    return authority.find('@') == std::string_view::npos;
}

awaitable<void> answer(ClientContext& ctx, tcp::socket& client, std::string response) {
    co_await write_all(client, response, *ctx.watchdog, ctx.rt->config.limits.idle_timeout);
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

struct PlainUpstream {
    ClientContext& ctx;
    tcp::socket& client;
    const EgressPolicy& policy;
    const Authority& dest;
    std::optional<tcp::socket>& upstream;
    std::optional<tcp::endpoint> required;

    awaitable<bool> connect(bool& reused, ExchangeResult& result) {
        reused = upstream.has_value();
        if (upstream) co_return true;
        tcp::socket socket(client.get_executor());
        auto dialed = co_await dial_checked(*ctx.rt, policy, dest, socket, *ctx.watchdog, required);
        if (dialed.denied != DenyReason::none) {
            result.status = 403;
            result.reason = std::string(deny_reason_name(dialed.denied));
            co_await write_all(client, denied_response(dialed.denied, dest), *ctx.watchdog,
                               ctx.rt->config.limits.idle_timeout);
            co_return false;
        }
        if (!dialed.ok()) {
            result.status = dialed.timed_out ? 504 : 502;
            result.reason = dialed.timed_out ? "upstream_timeout" : "upstream_unreachable";
            // Built before the co_await: GCC 12 destroys a conditional's temporary
            // twice across a suspension point.
            auto reply = dialed.timed_out
                             ? error_response(504, "upstream_timeout", "the destination did not answer in time", true)
                             : error_response(502, "upstream_unreachable", "cannot connect to the destination", true);
            co_await write_all(client, reply, *ctx.watchdog, ctx.rt->config.limits.idle_timeout);
            co_return false;
        }
        upstream.emplace(std::move(socket));
        ctx.watchdog->watch(*upstream);
        co_return true;
    }

    void drop() {
        if (!upstream) return;
        ctx.watchdog->unwatch(*upstream);
        error_code ignored;
        upstream->close(ignored);
        upstream.reset();
    }
};

}  // namespace

awaitable<void> handle_plain_http(ClientContext& ctx, tcp::socket& client, ReadBuffer& buf, RequestHead req,
                                  std::shared_ptr<const GatewayState> state, clock::time_point start,
                                  std::optional<tcp::endpoint> required) {
    std::string_view authority_text;
    std::string origin_form;
    if (!split_http_url(req.target, authority_text, origin_form)) {
        record_malformed_request(ctx, 400, start);
        co_await answer(ctx, client,
                        error_response(400, "not_a_proxy_request",
                                       "send CONNECT host:port, or an absolute-form http:// request", true));
        co_return;
    }
    auto parsed = parse_authority(authority_text, 80);
    if (!parsed) {
        record_malformed_request(ctx, 400, start);
        co_await answer(ctx, client, error_response(400, "bad_authority", host_error_text(parsed.error), true));
        co_return;
    }
    const Authority dest = *parsed.authority;
    const Session* session = state->find_session(ctx.session_id);

    AccessLogEntry e;
    e.session = ctx.session_id;
    e.method = req.method;
    e.host = dest.host;
    e.port = dest.port;
    e.set_path(origin_form);
    e.client = ctx.client_ip;
    auto finish_log = [&](std::string ingress, int status, std::string reason) {
        e.ts = std::chrono::system_clock::now();
        e.ms = ms_since(start);
        e.ingress = std::move(ingress);
        e.status = status;
        e.reason = std::move(reason);
        ctx.rt->record(e);
    };

    auto route = state->route(*session, dest, EgressKind::plain_http);
    if (route.kind == RouteKind::denied) {
        finish_log("denied", 403, std::string(deny_reason_name(route.reason)));
        co_await answer(ctx, client, denied_response(route.reason, dest));
        co_return;
    }
    auto framing = request_framing(req);
    if (!framing.framing) {
        finish_log("http", 400, "bad_framing");
        co_await answer(ctx, client, error_response(400, "bad_framing", framing.reason, true));
        co_return;
    }
    if (req.method == "TRACE" || req.method == "TRACK") {
        finish_log("http", 405, "method_not_allowed");
        co_await answer(ctx, client, error_response(405, "method_not_allowed", "TRACE and TRACK are refused", true));
        co_return;
    }

    ExchangeRequest exchange;
    // The outgoing head takes the client's headers over; the response framing
    // needs only these fields of the request.
    RequestHead summary;
    summary.method = req.method;
    summary.version_minor = req.version_minor;
    exchange.client_head = &summary;
    exchange.framing = *framing.framing;
    exchange.client_close = true;
    auto outgoing = build_outgoing_head(std::move(req), origin_form, format_authority(dest, dest.port != 80),
                                        exchange.framing, false, false);
    if (outgoing.bad_expect) {
        finish_log("http", 417, "expectation_failed");
        co_await answer(ctx, client, error_response(417, "expectation_failed", "only 100-continue is supported", true));
        co_return;
    }
    exchange.expect_continue = outgoing.expect_continue;
    std::string wire = serialize_request_head(outgoing.head);

    std::optional<tcp::socket> upstream;
    ReadBuffer upstream_buf(16384);
    PlainUpstream connector{ctx, client, session->policy, dest, upstream, required};
    std::string write_buffer;  // one exchange per connection here
    ExchangeIo<tcp::socket, tcp::socket> io{
        client, buf, upstream, upstream_buf, *ctx.watchdog, ctx.rt->config.limits,
        [&connector](bool& reused, ExchangeResult& r) { return connector.connect(reused, r); }, [&connector] { connector.drop(); },
        "the destination", write_buffer};
    ExchangeResult result;
    if (co_await send_request(io, wire, exchange, result)) co_await relay_response(io, exchange, true, result);
    connector.drop();
    if (result.upstream_seconds > 0)
        ctx.rt->metrics.upstream_latency(std::chrono::duration<double>(result.upstream_seconds));
    e.bytes_up = result.bytes_up;
    e.bytes_down = result.bytes_down;
    // A destination refused at the address check is a denial, like any other.
    finish_log(result.status == 403 ? "denied" : "http", result.status, result.reason);
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace vaultgate::net
