// Binding the admin listener and its accept loop; admin_connection.cpp serves
// each connection.
#include "net/admin/admin_listener.hpp"

#include "net/io/listen.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <filesystem>

namespace vaultgate::net {

namespace {

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
awaitable<void> admin_accept_loop(Acceptor* acceptor, std::shared_ptr<const AdminConnectionSettings> settings) {
    asio::steady_timer backoff(acceptor->get_executor());
    auto slots = std::make_shared<ConnectionSlots>();
    slots->max = settings->limits.max_connections;
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
        asio::co_spawn(ex, serve_admin_connection(std::move(socket), std::make_shared<SlotHold>(slots), settings),
                       log_admin_failure);
    }
}

}  // namespace

std::shared_ptr<const AdminConnectionSettings> AdminListener::settings(std::optional<std::string> token) const {
    return std::make_shared<const AdminConnectionSettings>(
        AdminConnectionSettings{handler_, std::move(token), limits_, runtime_});
}

AdminListener::AdminListener(asio::io_context& ioc, ListenAddress address, Handler handler,
                             std::optional<std::string> token, AdminLimits limits,
                             std::shared_ptr<const Runtime> runtime)
    : ioc_(ioc),
      address_(std::move(address)),
      handler_(std::move(handler)),
      token_(std::move(token)),
      limits_(limits),
      runtime_(std::move(runtime)) {}

AdminListener::~AdminListener() {
    if (!address_.unix_path.empty() && unix_acceptor_) {
        std::error_code ec;
        std::filesystem::remove(address_.unix_path, ec);
    }
}

void AdminListener::start() {
    const std::string what = "listen.admin: cannot listen on " + address_.to_string();
    if (address_.is_unix()) {
        unix_acceptor_ = std::make_unique<asio::local::stream_protocol::acceptor>(ioc_);
        listen_unix(*unix_acceptor_, address_.unix_path, what);
        asio::co_spawn(ioc_, admin_accept_loop(unix_acceptor_.get(), settings(std::nullopt)), log_admin_failure);
        return;
    }
    if (!token_) throw std::runtime_error("admin.token_file is required when listen.admin is a TCP address");
    error_code ec;
    auto addr = asio::ip::make_address(address_.host, ec);
    if (ec) throw std::runtime_error("listen.admin: " + address_.to_string() + " is not an IP address");
    tcp_acceptor_ = std::make_unique<tcp::acceptor>(ioc_);
    listen_tcp(*tcp_acceptor_, tcp::endpoint(addr, address_.port), what);
    asio::co_spawn(ioc_, admin_accept_loop(tcp_acceptor_.get(), settings(token_)), log_admin_failure);
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
