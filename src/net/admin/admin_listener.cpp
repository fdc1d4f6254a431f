// The admin API listener: HTTP/1.1 over TCP (bearer token, compared in constant
// time) or a unix socket (mode 0600). It parses with the same strict parser as
// the proxy, checks the token, and hands a parsed call to the handler.
#include "net/admin/admin_listener.hpp"

#include "net/io/http_io.hpp"
#include "net/proxy/proxy_responses.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/vault/store.hpp"

#include <sys/stat.h>

#include <filesystem>

namespace vaultgate::net {

namespace {

constexpr std::size_t max_admin_body = 1 << 20;

// Query components are form-encoded: '+' is a space, and a malformed escape
// stays as it is.
std::string query_component_decode(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (const auto escaped = percent_escape_at(in, i)) {
            out.push_back(static_cast<char>(*escaped));
            i += 2;
            continue;
        }
        out.push_back(in[i] == '+' ? ' ' : in[i]);
    }
    return out;
}

void split_target(std::string_view target, AdminRequest& call) {
    auto q = target.find('?');
    call.path = std::string(target.substr(0, q));
    if (q == std::string_view::npos) return;
    auto query = target.substr(q + 1);
    while (!query.empty()) {
        auto amp = query.find('&');
        auto pair = query.substr(0, amp);
        auto eq = pair.find('=');
        if (!pair.empty())
            call.query[query_component_decode(pair.substr(0, eq))] =
                eq == std::string_view::npos ? std::string() : query_component_decode(pair.substr(eq + 1));
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
}

std::string render(const AdminResponse& reply, bool close) {
    // A 401 names the scheme to use, as HTTP requires.
    const bool challenge = reply.status == 401;
    std::string out;
    out.reserve(reply.body.size() + 160);
    out.append("HTTP/1.1 ").append(std::to_string(reply.status)).append(" ").append(status_text(reply.status));
    out.append("\r\nContent-Type: ").append(reply.content_type);
    out.append("\r\nContent-Length: ").append(std::to_string(reply.body.size()));
    out.append("\r\nCache-Control: no-store\r\n");
    if (close) out.append("Connection: close\r\n");
    if (challenge) out.append("WWW-Authenticate: Bearer realm=\"vaultgate\"\r\n");
    for (const auto& [name, value] : reply.headers) {
        // Handler-set names and values are fixed text; CR/LF would split the head.
        if (name.find_first_of("\r\n") != std::string::npos || value.find_first_of("\r\n") != std::string::npos)
            continue;
        out.append(name).append(": ").append(value).append("\r\n");
    }
    out.append("\r\n").append(reply.body);
    return out;
}

AdminResponse error_reply(int status, std::string_view code, std::string_view message) {
    AdminResponse r;
    r.status = status;
    auto full = error_response(status, code, message, false);
    r.body = full.substr(full.find("\r\n\r\n") + 4);
    return r;
}

bool token_matches(const RequestHead& req, const std::string& token) {
    if (req.count("authorization") != 1) return false;
    std::string_view v = *req.get("authorization");
    constexpr std::string_view scheme = "bearer ";
    if (v.size() <= scheme.size() || !iequals(v.substr(0, scheme.size()), scheme)) return false;
    v.remove_prefix(scheme.size());
    return constant_time_equal(v, token);
}

// The connections one listener serves at once. Touched only on the admin
// thread, which runs the accept loop and every connection.
struct ConnectionSlots {
    std::size_t open = 0;
    std::size_t max = 0;
    bool refusal_logged = false;  // since the last slot was freed: one line per episode, not per attempt
};

// One slot, held for as long as a connection's coroutine lives.
class SlotHold {
public:
    explicit SlotHold(std::shared_ptr<ConnectionSlots> slots) : slots_(std::move(slots)) { ++slots_->open; }
    SlotHold(SlotHold&& other) noexcept : slots_(std::move(other.slots_)) {}
    SlotHold(const SlotHold&) = delete;
    SlotHold& operator=(const SlotHold&) = delete;
    SlotHold& operator=(SlotHold&&) = delete;
    ~SlotHold() {
        if (!slots_) return;
        --slots_->open;
        slots_->refusal_logged = false;
    }

private:
    std::shared_ptr<ConnectionSlots> slots_;
};

// Reads a body of `length` bytes into `body` under the deadline the watchdog
// got when the head started. It is not re-armed per read, so a sender that
// trickles bytes is cut at the same moment as one that sends none.
template <class Socket>
awaitable<bool> read_body_within_deadline(Socket& socket, ReadBuffer& buf, std::size_t length, Watchdog& watchdog,
                                          std::string& body) {
    // Reserved up front: a growing string would leave copies of a credential behind.
    body.reserve(length);
    while (body.size() < length) {
        if (buf.empty()) {
            std::size_t len = 0;
            char* space = buf.prepare(len);
            auto [ec, n] = co_await read_some(socket, space, len);
            buf.commit(n);
            if (n == 0) co_return false;  // closed, failed, or cut by the watchdog
            // The deadline may pass just as a read completes, too late to cancel it.
            if (watchdog.expired()) co_return false;
        }
        auto take = std::min(length - body.size(), buf.size());
        body.append(buf.view().substr(0, take));
        buf.consume(take);
    }
    co_return true;
}

template <class Socket>
awaitable<void> serve_admin_connection(Socket socket, [[maybe_unused]] SlotHold slot,
                                       AdminListener::Handler handler, std::optional<std::string> token,
                                       AdminLimits admin_limits) {
    auto watchdog = std::make_shared<Watchdog>(socket.get_executor());
    WatchdogStop stop_watchdog(watchdog);
    watchdog->start();
    watchdog->watch(socket);
    ReadBuffer buf(8192);
    HeadLimits limits;
    limits.max_head_bytes = 16384;
    limits.max_request_line = 8192;
    // `complete` runs from the first byte of a head to the end of its body.
    const HeadTimeouts timeouts{std::chrono::seconds(60), admin_limits.request_timeout};
    for (;;) {
        RequestHead req;
        ParseResult parsed;
        auto outcome = co_await read_head(socket, buf, req, parse_request_head, limits, *watchdog, timeouts, parsed);
        if (outcome == HeadOutcome::invalid) {
            co_await write_all(socket, render(error_reply(parsed.http_status, "bad_request", parsed.reason), true),
                               *watchdog, std::chrono::seconds(10));
            break;
        }
        if (outcome != HeadOutcome::ok) break;
        bool close = wants_close(req.headers, req.version_minor);
        AdminResponse reply;
        AdminRequest call;
        call.method = req.method;
        split_target(req.target, call);
        auto framing = request_framing(req);
        const bool has_body = framing.framing && framing.framing->kind != BodyKind::none &&
                              !(framing.framing->kind == BodyKind::content_length && framing.framing->length == 0);
        // Decided on the head alone: no byte of an unauthenticated body is read.
        const bool authorised = !token || token_matches(req, *token) || (call.path == "/healthz" && !has_body);
        if (!framing.framing) {
            reply = error_reply(400, "bad_framing", framing.reason);
            close = true;
        } else if (!authorised) {
            reply = error_reply(401, "unauthorized", "send Authorization: Bearer <admin token>");
            close = true;
        } else if (framing.framing->kind == BodyKind::chunked) {
            reply = error_reply(411, "length_required", "send the body with Content-Length");
            close = true;
        } else if (framing.framing->length > max_admin_body) {
            reply = error_reply(413, "body_too_large", "admin request bodies are limited to 1 MiB");
            close = true;
        } else {
            std::string body;
            const auto length = static_cast<std::size_t>(framing.framing->length);
            const bool complete = co_await read_body_within_deadline(socket, buf, length, *watchdog, body);
            if (!complete) {
                wipe_string(body);
                break;
            }
            call.body = std::move(body);
            try {
                reply = handler(call);
            } catch (const std::exception& e) {
                log_error(std::string("admin: handler failed: ") + e.what());
                reply = error_reply(500, "internal_error", "the request could not be completed");
            }
            // The body may have carried a credential value.
            wipe_string(call.body);
            wipe_string(body);
        }
        if (co_await write_all(socket, render(reply, close), *watchdog, std::chrono::seconds(10))) break;
        if (close) break;
    }
    error_code ignored;
    socket.close(ignored);
}

void log_admin_failure(std::exception_ptr e) { log_exception("admin: connection failed", e); }

// Past the cap a connection is reset at once rather than left to wait in the
// backlog: a refused client knows at once, and can retry once a slot is free.
template <class Socket>
void refuse_connection(Socket& socket, ConnectionSlots& slots) {
    if (!slots.refusal_logged) {
        log_warn("admin: " + std::to_string(slots.max) +
                 " connections open (limits.admin_connections); refusing new ones until one closes");
        slots.refusal_logged = true;
    }
    error_code ignored;
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
}

template <class Acceptor>
awaitable<void> admin_accept_loop(Acceptor* acceptor, AdminListener::Handler handler, std::optional<std::string> token,
                                  AdminLimits limits) {
    asio::steady_timer backoff(acceptor->get_executor());
    auto slots = std::make_shared<ConnectionSlots>();
    slots->max = limits.max_connections;
    while (acceptor->is_open()) {
        auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
        if (ec) {
            if (!acceptor->is_open() || ec == asio::error::operation_aborted) break;
            log_warn("admin: accept failed: " + ec.message());
            backoff.expires_after(std::chrono::milliseconds(100));
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        if (slots->open >= slots->max) {
            refuse_connection(socket, *slots);
            continue;
        }
        auto ex = socket.get_executor();
        asio::co_spawn(ex, serve_admin_connection(std::move(socket), SlotHold(slots), handler, token, limits),
                       log_admin_failure);
    }
}

}  // namespace

AdminListener::AdminListener(asio::io_context& ioc, ListenAddress address, Handler handler,
                             std::optional<std::string> token, AdminLimits limits)
    : ioc_(ioc),
      address_(std::move(address)),
      handler_(std::move(handler)),
      token_(std::move(token)),
      limits_(limits) {}

AdminListener::~AdminListener() {
    if (!address_.unix_path.empty() && unix_acceptor_) {
        std::error_code ec;
        std::filesystem::remove(address_.unix_path, ec);
    }
}

void AdminListener::start() {
    if (address_.is_unix()) {
        namespace fs = std::filesystem;
        std::error_code fec;
        // A socket file left by an earlier run is replaced; anything else is not ours to delete.
        if (fs::is_socket(address_.unix_path, fec)) fs::remove(address_.unix_path, fec);
        unix_acceptor_ = std::make_unique<asio::local::stream_protocol::acceptor>(ioc_);
        asio::local::stream_protocol::endpoint ep(address_.unix_path);
        error_code ec;
        unix_acceptor_->open(ep.protocol(), ec);
        // The mode is set through the umask so no moment exists where the socket is wider open.
        mode_t old = ::umask(0177);
        if (!ec) unix_acceptor_->bind(ep, ec);
        ::umask(old);
        if (!ec) unix_acceptor_->listen(asio::socket_base::max_listen_connections, ec);
        if (ec) throw std::runtime_error("listen.admin: cannot listen on " + address_.to_string() + ": " + ec.message());
        ::chmod(address_.unix_path.c_str(), 0600);
        asio::co_spawn(ioc_, admin_accept_loop(unix_acceptor_.get(), handler_, std::optional<std::string>{}, limits_),
                       log_admin_failure);
        return;
    }
    if (!token_) throw std::runtime_error("admin.token_file is required when listen.admin is a TCP address");
    tcp_acceptor_ = std::make_unique<tcp::acceptor>(ioc_);
    error_code ec;
    auto addr = asio::ip::make_address(address_.host, ec);
    if (ec) throw std::runtime_error("listen.admin: " + address_.to_string() + " is not an IP address");
    tcp::endpoint ep(addr, address_.port);
    tcp_acceptor_->open(ep.protocol(), ec);
    if (!ec) tcp_acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) tcp_acceptor_->bind(ep, ec);
    if (!ec) tcp_acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("listen.admin: cannot listen on " + address_.to_string() + ": " + ec.message());
    asio::co_spawn(ioc_, admin_accept_loop(tcp_acceptor_.get(), handler_, token_, limits_),
                   log_admin_failure);
}

void AdminListener::close() {
    error_code ignored;
    if (tcp_acceptor_) tcp_acceptor_->close(ignored);
    if (unix_acceptor_) unix_acceptor_->close(ignored);
}

std::optional<tcp::endpoint> AdminListener::tcp_endpoint() const {
    if (!tcp_acceptor_) return std::nullopt;
    error_code ec;
    auto ep = tcp_acceptor_->local_endpoint(ec);
    if (ec) return std::nullopt;
    return ep;
}

}  // namespace vaultgate::net
