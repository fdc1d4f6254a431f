#include "plain_http.hpp"

#include "http_io.hpp"
#include "proxy_responses.hpp"

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
    else origin_form = "/" + std::string(rest.substr(end));
    // Userinfo in the URL would let "http://allowed@evil/" confuse a reader of the log.
    return authority.find('@') == std::string_view::npos;
}

awaitable<void> answer(ClientContext& ctx, tcp::socket& client, std::string response) {
    co_await write_all(client, response, *ctx.watchdog, ctx.rt->config.limits.idle_timeout);
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace

awaitable<void> handle_plain_http(ClientContext ctx, tcp::socket client, ReadBuffer& buf, RequestHead req,
                                  std::shared_ptr<const GatewayState> state, clock::time_point start) {
    std::string_view authority_text;
    std::string origin_form;
    if (!split_http_url(req.target, authority_text, origin_form)) {
        co_await answer(ctx, client,
                        error_response(400, "not_a_proxy_request",
                                       "send CONNECT host:port, or an absolute-form http:// request", true));
        co_return;
    }
    auto parsed = parse_authority(authority_text, 80);
    if (!parsed) {
        co_await answer(ctx, client, error_response(400, "bad_authority", host_error_text(parsed.error), true));
        co_return;
    }
    const Session* session = state->find_session(ctx.session_id);
    auto route = state->route(*session, *parsed.authority, EgressKind::plain_http);
    AccessLogEntry e;
    e.ts = std::chrono::system_clock::now();
    e.session = ctx.session_id;
    e.method = req.method;
    e.host = parsed.authority->host;
    e.port = parsed.authority->port;
    e.set_path(origin_form);
    e.client = ctx.client_ip;
    e.ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    if (route.kind == RouteKind::denied) {
        e.ingress = "denied";
        e.status = 403;
        e.reason = std::string(deny_reason_name(route.reason));
        ctx.rt->log->write(e);
        co_await answer(ctx, client, denied_response(route.reason, *parsed.authority));
        co_return;
    }
    e.ingress = "http";
    e.status = 501;
    e.reason = "plain_http_forwarding_unavailable";
    ctx.rt->log->write(e);
    co_await answer(ctx, client,
                    error_response(501, "not_implemented", "plain http:// forwarding is not available yet", true));
}

}  // namespace vaultgate::net
