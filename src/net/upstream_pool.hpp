#pragma once
// Idle upstream TLS connections kept for the next client connection of the same
// session to the same origin, so a sandbox that opens a new CONNECT per request
// does not pay a new upstream handshake each time. The key includes the session:
// a connection is never shared between sessions. One pool per I/O thread, so a
// connection is only used on the thread whose reactor it is registered with.
//
// A client connection hands its upstream connection back after every exchange
// and takes one (most often the same) for its next request. So a burst of
// clients shares a few upstream connections instead of each dialing and
// holding its own, which is what an idle client costs most in memory.
//
// A connection waits at most the idle timeout: each I/O thread sweeps its pool
// (sweep_upstream_pool), so connections do not outlive it on a quiet thread.
// The sweep also frees the record buffers of connections that waited longer
// than a moment; a connection taken back at once keeps them, so a busy
// keep-alive client allocates nothing per request.
// Each pooled descriptor is held in the connection limiter's budget.
#include "connection_limiter.hpp"
#include "read_buffer.hpp"
#include "tls_socket.hpp"
#include "types.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate::net {

class UpstreamPool {
public:
    static std::string key(const std::string& session, const std::string& host, std::uint16_t port);

    UpstreamPool() = default;
    UpstreamPool(const UpstreamPool&) = delete;
    UpstreamPool& operator=(const UpstreamPool&) = delete;
    ~UpstreamPool();

    // Until configured, nothing is kept. Called on the I/O thread that owns the pool.
    void configure(ConnectionLimiter* limiter, clock::duration max_idle);

    // A healthy idle connection for key, or nothing. Stale ones are closed.
    std::optional<tls_stream> take(const std::string& key);
    // Keeps the connection for later, or closes it when the pool or the
    // descriptor budget is full.
    void give(const std::string& key, tls_stream stream);
    // Closes the connections that waited longer than the idle timeout, and
    // frees the record buffers of those that waited longer than buffer_linger.
    void evict_expired();
    // Closes them all (the descriptor budget needs them for clients).
    void clear();
    std::size_t size() const noexcept { return total_; }

    static constexpr std::size_t max_per_key = 16;
    static constexpr std::size_t max_total = 512;
    static constexpr clock::duration buffer_linger = std::chrono::milliseconds(250);

private:
    struct Idle {
        tls_stream stream;
        clock::time_point since;
        bool buffers_released = false;
    };
    static bool usable(tls_stream& stream);
    // Forgets `count` connections that were just closed or handed out.
    void dropped(std::size_t count);

    ConnectionLimiter* limiter_ = nullptr;
    clock::duration max_idle_{};
    std::map<std::string, std::vector<Idle>> idle_;
    std::size_t total_ = 0;
};

// The pool of the calling I/O thread.
UpstreamPool& this_thread_upstream_pool();

// Runs on an I/O thread for as long as its io_context does: configures the
// thread's pool and closes its expired connections every few seconds.
awaitable<void> sweep_upstream_pool(ConnectionLimiter* limiter, clock::duration max_idle);

}  // namespace vaultgate::net
