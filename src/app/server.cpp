// Listeners and worker threads. One io_context per worker thread: a connection
// lives on one thread for its whole life, so its coroutines need no locks; the
// accept loop hands new sockets out round-robin.
#include "vaultgate/app/server.hpp"

#include "net/admin/admin_listener.hpp"
#include "net/io/listen.hpp"
#include "net/mint/token_broker.hpp"
#include "net/proxy/connection.hpp"
#include "net/upstream/connection_limiter.hpp"
#include "net/upstream/dialer.hpp"
#include "net/upstream/runtime.hpp"
#include "net/upstream/tls_contexts.hpp"
#include "net/upstream/upstream_pool.hpp"
#include "vaultgate/mem/block_cache.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace vaultgate {

namespace {

using namespace vaultgate::net;

tcp::endpoint endpoint_of(const ListenAddress& a) {
    error_code ec;
    auto addr = asio::ip::make_address(a.host, ec);
    if (ec) throw std::runtime_error("listen address " + a.to_string() + " is not an IP address");
    return {addr, a.port};
}

class GatewayServer final : public Server {
public:
    GatewayServer(const Config& config, std::shared_ptr<const GatewayState> state, ServerOptions options)
        : runtime_(std::make_shared<Runtime>()),
          options_(std::move(options)),
          limiter_(config.limits.max_connections, config.limits.max_connections_per_client) {
        auto& rt = *runtime_;
        rt.config = config;
        rt.publish(std::move(state));
        rt.ca = CertificateAuthority::load(config.ca_cert, config.ca_key);
        rt.leaves = std::make_unique<LeafCache>(*rt.ca);
        configure_client_facing_context(rt.client_facing_tls);
        rt.publish_settings(make_live_settings(config, settings_generation_));
        rt.log = std::make_unique<AccessLog>(config.log_access);

        resolver_ = std::make_unique<ResolverPool>(8);
        rt.resolver = resolver_.get();
        rt.token_broker = std::make_shared<TokenBroker>();
        // A test's explicit count first, then the config's, then one per core.
        unsigned threads = options_.threads               ? options_.threads
                           : config.limits.worker_threads ? static_cast<unsigned>(config.limits.worker_threads)
                                                          : auto_worker_threads(std::thread::hardware_concurrency());
        for (unsigned i = 0; i < threads; ++i) {
            contexts_.push_back(std::make_unique<asio::io_context>(1));
            guards_.emplace_back(asio::make_work_guard(*contexts_.back()));
        }
    }

    ~GatewayServer() override {
        stop(std::chrono::milliseconds(0));
        wait();
        if (spare_fd_ >= 0) ::close(spare_fd_);
    }

    void start() override {
        auto& main = *contexts_.front();
        runtime_->local_addresses.refresh();  // what a wildcard listener answers on; never dialled
        proxy_acceptor_ = std::make_unique<tcp::acceptor>(main);
        open_acceptor(*proxy_acceptor_, endpoint_of(runtime_->config.listen_proxy), "listen.proxy");
        runtime_->self_endpoints.push_back(proxy_acceptor_->local_endpoint());
        if (options_.on_proxy_bound) options_.on_proxy_bound(proxy_acceptor_->local_endpoint().port());
        if (options_.admin_handler) {
            const auto& limits = runtime_->config.limits;
            const AdminLimits admin_limits{limits.admin_connections, limits.header_timeout};
            admin_listener_ =
                std::make_unique<AdminListener>(admin_context_, runtime_->config.listen_admin, options_.admin_handler,
                                                options_.admin_token, admin_limits, runtime_);
            admin_listener_->start();
            if (auto ep = admin_listener_->tcp_endpoint()) runtime_->self_endpoints.push_back(*ep);
        } else if (!runtime_->config.listen_admin.is_unix()) {
            // Not served here, but still never a destination.
            auto admin = endpoint_of(runtime_->config.listen_admin);
            if (admin.port() != 0) runtime_->self_endpoints.push_back(admin);
        }
        if (runtime_->config.listen_transparent) {
            transparent_acceptor_ = std::make_unique<tcp::acceptor>(main);
            open_acceptor(*transparent_acceptor_, endpoint_of(*runtime_->config.listen_transparent),
                          "listen.transparent");
            runtime_->self_endpoints.push_back(transparent_acceptor_->local_endpoint());
            asio::co_spawn(main, accept_loop(runtime_, transparent_acceptor_.get(), this, &handle_transparent_client),
                           [](std::exception_ptr e) {
                               if (e) log_error("transparent accept loop ended with an exception");
                           });
        }
        // Once every listener is in self_endpoints, which POST /v1/explain reads on this thread.
        if (admin_listener_)
            admin_thread_ = std::thread([this] {
                try {
                    admin_context_.run();
                } catch (const std::exception& e) {
                    log_error(std::string("admin: unexpected exception: ") + e.what());
                }
            });
        asio::co_spawn(main, accept_loop(runtime_, proxy_acceptor_.get(), this, &handle_proxy_client),
                       [](std::exception_ptr e) {
                           if (e) log_error("accept loop ended with an exception");
                       });
        for (auto& ctx : contexts_) {
            asio::co_spawn(*ctx, sweep_upstream_pool(&limiter_, runtime_->config.limits.upstream_idle_timeout),
                           asio::detached);
            threads_.emplace_back([c = ctx.get()] {
                block_cache::enable_on_this_thread();
                for (;;) {
                    try {
                        c->run();
                        break;
                    } catch (const std::exception& e) {
                        log_error(std::string("worker: unexpected exception: ") + e.what());
                    }
                }
                block_cache::disable_on_this_thread();
            });
        }
        std::string admin = "off";
        if (admin_listener_)
            admin = admin_listener_->tcp_endpoint() ? format_endpoint(*admin_listener_->tcp_endpoint())
                                                    : runtime_->config.listen_admin.to_string();
        log_info("vaultgate listening: proxy " + format_endpoint(proxy_acceptor_->local_endpoint()) + " admin " +
                 admin +
                 (transparent_acceptor_ ? " transparent " + format_endpoint(transparent_acceptor_->local_endpoint())
                                        : std::string()));
    }

    void stop(std::chrono::milliseconds drain) override {
        {
            std::lock_guard lock(stop_mutex_);
            if (stopping_) return;
            stopping_ = true;
        }
        runtime_->draining = true;
        // Keep-alive connections waiting for their next request end now; the
        // ones mid-request finish it (their loop sees `draining`).
        runtime_->connections.close_idle();
        if (proxy_acceptor_) {
            asio::post(contexts_.front()->get_executor(), [this] {
                error_code ignored;
                proxy_acceptor_->close(ignored);
                if (transparent_acceptor_) transparent_acceptor_->close(ignored);
            });
        }
        // In-flight connections get up to `drain` to finish; then everything stops.
        limiter_.wait_idle_until(clock::now() + drain);
        for (auto& g : guards_) g.reset();
        for (auto& c : contexts_) c->stop();
        if (admin_listener_) asio::post(admin_context_, [this] { admin_listener_->close(); });
        admin_context_.stop();
    }

    void wait() override {
        for (auto& t : threads_)
            if (t.joinable()) t.join();
        if (admin_thread_.joinable()) admin_thread_.join();
    }

    std::uint16_t proxy_port() const override { return proxy_acceptor_ ? proxy_acceptor_->local_endpoint().port() : 0; }

    // Each I/O thread closes the connections of its own pool.
    void empty_upstream_pools() {
        for (auto& ctx : contexts_) asio::post(*ctx, [] { this_thread_upstream_pool().clear(); });
    }

    void reload(const Config& config) override {
        auto settings = make_live_settings(config, settings_generation_ + 1);
        runtime_->log->reopen(config.log_access);
        ++settings_generation_;
        runtime_->publish_settings(std::move(settings));
        limiter_.set_caps(config.limits.max_connections, config.limits.max_connections_per_client);
        for (auto& ctx : contexts_)
            asio::post(*ctx, [limiter = &limiter_, idle = config.limits.upstream_idle_timeout] {
                this_thread_upstream_pool().configure(limiter, idle);
            });
    }

    void replace_state(std::shared_ptr<const GatewayState> state) override {
        // A rotated or removed service's minted token goes now, not at its next request.
        if (state) runtime_->token_broker->forget_replaced(*state);
        runtime_->publish(std::move(state));
    }
    std::shared_ptr<const GatewayState> state() const override { return runtime_->snapshot(); }
    AccessLog& access_log() override { return *runtime_->log; }
    Metrics& metrics() override { return runtime_->metrics; }
    std::uint16_t admin_port() const override {
        if (!admin_listener_) return 0;
        auto ep = admin_listener_->tcp_endpoint();
        return ep ? ep->port() : 0;
    }
    void close_session_connections(const std::string& session_id) override {
        runtime_->connections.close_session(session_id);
    }
    void release_idle_blocks() override {
        for (auto& ctx : contexts_)
            asio::post(*ctx, [] { block_cache::trim(block_cache::clock::now() - block_cache::idle_before_freed); });
    }
    MetricsExtras metrics_extras() const override {
        MetricsExtras extras;
        extras.cert_cache_hits = runtime_->leaves->hits();
        extras.cert_cache_misses = runtime_->leaves->misses();
        if (runtime_->log) extras.access_log_dropped_lines = runtime_->log->dropped_lines();
        extras.upstream_pooled_connections = UpstreamPool::total_in_all_pools();
        extras.block_cache_bytes = block_cache::bytes_held_by_all_threads();
        return extras;
    }

private:
    static std::string format_endpoint(const tcp::endpoint& ep) {
        return ep.address().is_v6() ? "[" + ep.address().to_string() + "]:" + std::to_string(ep.port())
                                    : ep.address().to_string() + ":" + std::to_string(ep.port());
    }

    static void open_acceptor(tcp::acceptor& acceptor, const tcp::endpoint& ep, const std::string& key) {
        listen_tcp(acceptor, ep, key + ": cannot listen on " + format_endpoint(ep));
    }

    asio::io_context& next_context() {
        auto& c = *contexts_[next_++ % contexts_.size()];
        return c;
    }

    using ConnectionHandler = awaitable<void> (*)(std::shared_ptr<Runtime>, tcp::socket, std::string);

    // What ends a connection, from its coroutine's completion: the counters and
    // the client's admission slot. (A completion handler rather than a wrapper
    // coroutine, whose frame an idle connection would hold for its whole life.)
    static auto connection_finished(std::shared_ptr<Runtime> rt, GatewayServer* self, std::string client_ip) {
        return [rt = std::move(rt), self, client_ip = std::move(client_ip)](std::exception_ptr e) {
            log_exception("connection: unexpected exception", e);
            rt->metrics.connection_closed();
            self->limiter_.release(client_ip);
        };
    }

    static awaitable<void> accept_loop(std::shared_ptr<Runtime> rt, tcp::acceptor* acceptor, GatewayServer* self,
                                       ConnectionHandler handler) {
        asio::steady_timer backoff(acceptor->get_executor());
        while (acceptor->is_open()) {
            auto& target = self->next_context();
            auto [ec, socket] = co_await acceptor->async_accept(target, use_tuple);
            if (ec) {
                if (ec == asio::error::operation_aborted || !acceptor->is_open()) break;
                if (ec == asio::error::no_descriptors) self->shed_one_pending(*acceptor);
                // The pending connection stays queued otherwise; pausing keeps
                // the loop from spinning until descriptors free up.
                log_warn("accept failed: " + ec.message());
                backoff.expires_after(std::chrono::milliseconds(100));
                co_await backoff.async_wait(use_tuple);
                continue;
            }
            error_code peer_ec;
            auto peer = socket.remote_endpoint(peer_ec);
            std::string client_ip = peer_ec ? std::string() : peer.address().to_string();
            auto admission = self->limiter_.try_admit(client_ip);
            if (admission != Admission::admitted) {
                // Clients come first: pooled upstream connections are only a
                // saving, so descriptors they hold are freed for the next client.
                if (admission == Admission::descriptors && self->limiter_.pooled() > 0) self->empty_upstream_pools();
                // Refused promptly: a reset, not a connection left to time out.
                rt->metrics.connection_refused();
                error_code ignored;
                socket.set_option(asio::socket_base::linger(true, 0), ignored);
                socket.close(ignored);
                continue;
            }
            rt->metrics.connection_opened();
            auto ex = socket.get_executor();
            // Two copies: the order in which co_spawn's arguments are
            // evaluated is unspecified, so neither may move from the other.
            auto connection = handler(rt, std::move(socket), client_ip);
            asio::co_spawn(ex, std::move(connection), connection_finished(rt, self, std::move(client_ip)));
        }
    }

    // Out of descriptors: use the spare one to take the oldest pending
    // connection off the queue and close it, so that client gets an answer
    // (a close) instead of hanging, then take the spare back.
    void shed_one_pending(tcp::acceptor& acceptor) {
        if (spare_fd_ >= 0) ::close(spare_fd_);
        int fd = ::accept(acceptor.native_handle(), nullptr, nullptr);
        if (fd >= 0) ::close(fd);
        spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        runtime_->metrics.connection_refused();
    }

    std::shared_ptr<Runtime> runtime_;
    ServerOptions options_;
    asio::io_context admin_context_{1};
    std::unique_ptr<AdminListener> admin_listener_;
    std::thread admin_thread_;
    std::vector<std::unique_ptr<asio::io_context>> contexts_;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
    std::vector<std::thread> threads_;
    std::unique_ptr<tcp::acceptor> proxy_acceptor_;
    std::unique_ptr<tcp::acceptor> transparent_acceptor_;
    // Declared after the io_contexts so it is joined before they go: a finished
    // lookup posts back to one of them.
    std::unique_ptr<ResolverPool> resolver_;
    std::size_t next_ = 0;
    std::uint64_t settings_generation_ = 0;  // of the settings published last

    std::mutex stop_mutex_;
    bool stopping_ = false;
    ConnectionLimiter limiter_;
    int spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
};

}  // namespace

std::unique_ptr<Server> make_server(const Config& config, std::shared_ptr<const GatewayState> state,
                                    ServerOptions options) {
    return std::make_unique<GatewayServer>(config, std::move(state), options);
}

}  // namespace vaultgate
