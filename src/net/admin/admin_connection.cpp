// The admin connection loop. The deadlines are the watchdog's: an idle wait for
// the first byte of a request, then one total deadline for its head and body
// together, so a sender that trickles bytes is cut as one that sends none.
#include "net/admin/admin_connection.hpp"

#include "net/admin/admin_wire.hpp"
#include "net/admin/explain_endpoint.hpp"
#include "net/io/watchdog.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/util/secret.hpp"

#include <boost/beast/core/flat_buffer.hpp>

#include <cstdint>
#include <limits>

namespace vaultgate::net {

namespace {

constexpr std::uint64_t max_admin_body = 1 << 20;
constexpr std::size_t max_head_bytes = 16384;
constexpr std::size_t max_request_line = 8192;
constexpr auto idle_timeout = std::chrono::seconds(60);
constexpr auto write_timeout = std::chrono::seconds(10);

// Why a head that Beast read is still refused, or nothing.
std::optional<AdminResponse> refuse_head(const http::request_header<>& head) {
    // "METHOD SP target SP HTTP/1.1"
    const std::size_t line_length = head.method_string().size() + 1 + head.target().size() + 9;
    if (line_length > max_request_line) return listener_error(414, "bad_request", "start line too long");
    if (head.version() != 10 && head.version() != 11)
        return listener_error(505, "bad_request", "unsupported HTTP version");
    return std::nullopt;
}

// A head Beast could not read: answered when it was the client's mistake,
// not when the peer went away or the deadline passed.
std::optional<AdminResponse> refusal_of(const error_code& ec) {
    static const auto& http_errors = http::make_error_code(http::error::bad_target).category();
    if (ec.category() != http_errors || ec == http::error::end_of_stream || ec == http::error::partial_message)
        return std::nullopt;
    if (ec == http::error::header_limit) return listener_error(431, "bad_request", "header section too large");
    if (ec == http::error::bad_content_length || ec == http::error::multiple_content_length ||
        ec == http::error::bad_transfer_encoding)
        return listener_error(400, "bad_framing", "the request body's framing is invalid");
    return listener_error(400, "bad_request", "malformed request head");
}

template <class Socket>
awaitable<bool> write_reply(Socket& socket, AdminResponse reply, bool close, Watchdog& watchdog) {
    auto res = render_admin_response(std::move(reply), close);
    watchdog.arm(write_timeout);
    auto [ec, n] = co_await http::async_write(socket, res, use_tuple);
    co_return !ec;
}

}  // namespace

template <class Socket>
awaitable<void> serve_admin_connection(Socket socket, std::shared_ptr<void> hold,
                                       std::shared_ptr<const AdminConnectionSettings> settings) {
    auto watchdog = std::make_shared<Watchdog>(socket.get_executor());
    WatchdogStop stop_watchdog(watchdog);
    watchdog->start();
    watchdog->watch(socket);
    boost::beast::flat_buffer buffer;
    for (;;) {
        // The first byte of a request may take the idle time; the rest of it,
        // head and body, the request timeout from then on.
        if (buffer.size() == 0) {
            watchdog->arm(idle_timeout);
            auto [ec, n] = co_await socket.async_read_some(buffer.prepare(4096), use_tuple);
            buffer.commit(n);
            if (n == 0) break;
        }
        watchdog->arm(settings->limits.request_timeout);

        http::request_parser<http::string_body> parser;
        parser.header_limit(max_head_bytes);
        // The size is checked on the head below, after the token.
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());
        auto [ec, n] = co_await http::async_read_header(socket, buffer, parser, use_tuple);
        if (ec) {
            if (auto refusal = refusal_of(ec); refusal && !watchdog->expired())
                co_await write_reply(socket, std::move(*refusal), true, *watchdog);
            break;
        }
        const auto& head = parser.get().base();
        if (auto refusal = refuse_head(head)) {
            co_await write_reply(socket, std::move(*refusal), true, *watchdog);
            break;
        }
        auto request = admin_request_of(head);
        bool close = !parser.keep_alive();
        const auto framing = admin_framing(head);
        const bool chunked = framing.framing && framing.framing->kind == BodyKind::chunked;
        const std::uint64_t length = framing.framing ? framing.framing->length : 0;
        const bool has_body = chunked || length > 0;
        // Decided on the head alone: no byte of an unauthenticated body is read.
        const bool authorised = !settings->token || bearer_token_matches(head, *settings->token) ||
                                (request && (request->path == "/healthz" || request->path == "/readyz") && !has_body);
        AdminResponse reply;
        if (!framing.framing) {
            reply = listener_error(400, "bad_framing", framing.reason);
            close = true;
        } else if (!authorised) {
            reply = listener_error(401, "unauthorized", "send Authorization: Bearer <admin token>");
            close = true;
        } else if (!request) {
            reply = listener_error(400, "bad_request", "the request target is not a path with an optional query");
            close = true;
        } else if (chunked) {
            reply = listener_error(411, "length_required", "send the body with Content-Length");
            close = true;
        } else if (length > max_admin_body) {
            reply = listener_error(413, "body_too_large", "admin request bodies are limited to 1 MiB");
            close = true;
        } else {
            // Under the deadline armed when the request began; not re-armed.
            if (has_body) {
                auto [body_ec, body_n] = co_await http::async_read(socket, buffer, parser, use_tuple);
                if (body_ec || watchdog->expired()) {
                    wipe_string(parser.get().body());
                    break;
                }
            }
            request->body = std::move(parser.get().body());
            if (settings->runtime && is_explain_request(*request)) {
                // A named awaitable: GCC 12 mishandles temporaries built inside co_await.
                auto explained = answer_explain(settings->runtime, std::move(*request));
                reply = co_await std::move(explained);
            } else {
                try {
                    reply = settings->handler(*request);
                } catch (const std::exception& e) {
                    log_error(std::string("admin: handler failed: ") + e.what());
                    reply = listener_error(500, "internal_error", "the request could not be completed");
                }
            }
            // The body may have carried a credential value.
            wipe_string(request->body);
        }
        if (!co_await write_reply(socket, std::move(reply), close, *watchdog)) break;
        if (close) break;
    }
    error_code ignored;
    socket.close(ignored);
}

template awaitable<void> serve_admin_connection(tcp::socket, std::shared_ptr<void>,
                                                std::shared_ptr<const AdminConnectionSettings>);
template awaitable<void> serve_admin_connection(asio::local::stream_protocol::socket, std::shared_ptr<void>,
                                                std::shared_ptr<const AdminConnectionSettings>);

}  // namespace vaultgate::net
