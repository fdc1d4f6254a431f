#pragma once
// Idle upstream TLS connections kept for the next client connection of the same
// session to the same origin, so a sandbox that opens a new CONNECT per request
// does not pay a new upstream handshake each time. The key includes the session:
// a connection is never shared between sessions. One pool per I/O thread, so a
// connection is only used on the thread whose reactor it is registered with.
//
// A client connection hands its upstream connection back whenever it waits
// for its next request, and takes one (most often the same) when that
// request comes. So a burst of clients shares a few upstream connections
// instead of each dialing and holding its own, which is what an idle client
// costs most in memory.
//
// Descriptors: a client that is still connected *lends* its connection. Its
// own place in the connection limiter's budget (client plus upstream) covers
// it, so a lent connection is always taken in; the pool holds places in the
// budget's pooled quarter only for connections beyond the lenders' count
// (those whose clients are gone), and closes the oldest when it gets none.
// So a gateway near its descriptor limit still keeps its active clients'
// upstream connections.
//
// A connection waits at most the idle timeout: each I/O thread sweeps its pool
// (sweep_upstream_pool), so connections do not outlive it on a quiet thread.
// Once a connection has waited `linger` (as long as a client waits before it
// sheds its own buffers), the sweep frees its record buffers and trims each
// key to max_per_key and the pool to max_total, oldest first.
#include "net/io/tls_socket.hpp"
#include "net/io/types.hpp"
#include "net/upstream/connection_limiter.hpp"
#include "vaultgate/mem/read_buffer.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate::net {

class UpstreamPool {
public:
    // The settings generation keeps a connection opened before a reload (other
    // pins, another trust store) from serving connections accepted after it.
    static std::string key(const std::string& session, const std::string& host, std::uint16_t port,
                           std::uint64_t settings_generation);

    UpstreamPool() = default;
    UpstreamPool(const UpstreamPool&) = delete;
    UpstreamPool& operator=(const UpstreamPool&) = delete;
    ~UpstreamPool();

    // Until configured, nothing is kept. Called on the I/O thread that owns the
    // pool; again on a reload, for the new idle timeout.
    void configure(ConnectionLimiter* limiter, clock::duration max_idle);
    // The sweep's timer, cancelled when an empty pool gets a connection (the
    // sweep sleeps while there is none).
    void set_wake(asio::steady_timer* wake) noexcept { wake_ = wake; }

    // A healthy idle connection for key, or nothing. Stale ones are closed.
    std::optional<tls_stream> take(const std::string& key);
    // Keeps the connection for later. A `lender` (a client that stays
    // connected) is counted until it calls end_lending(): right after its next
    // take(), before it dials, and when it ends. Any other connection is
    // closed when the budget has no place for it.
    void give(const std::string& key, tls_stream stream, bool lender);
    void end_lending();
    // Closes expired connections, frees the buffers of those that waited
    // `linger`, and trims to max_per_key and max_total.
    void evict_expired();
    // Closes the connections the budget holds places for (clients need them);
    // lent ones stay.
    void clear();
    std::size_t size() const noexcept { return total_; }
    // Connections held in every I/O thread's pool (for /metrics).
    static std::size_t total_in_all_pools() noexcept;

    static constexpr std::size_t max_per_key = 16;
    static constexpr std::size_t max_total = 512;
    static constexpr clock::duration linger = std::chrono::milliseconds(500);

private:
    struct Idle {
        tls_stream stream;
        clock::time_point since;
        bool buffers_released = false;
    };
    static bool usable(tls_stream& stream);
    // Forgets `count` connections that were just closed or handed out.
    void dropped(std::size_t count);
    // Holds places in the budget for the connections beyond the lenders'
    // count, closing the oldest for which there is none.
    void balance();
    void close_oldest();

    ConnectionLimiter* limiter_ = nullptr;
    asio::steady_timer* wake_ = nullptr;
    clock::duration max_idle_{};
    std::map<std::string, std::vector<Idle>> idle_;  // each list oldest first
    std::size_t total_ = 0;                          // connections kept
    std::size_t lenders_ = 0;                        // connected clients whose connection was lent
    std::size_t held_ = 0;                           // places held in the limiter's pooled quarter
};

// The pool of the calling I/O thread.
UpstreamPool& this_thread_upstream_pool();

// Runs on an I/O thread for as long as its io_context does: configures the
// thread's pool and sweeps it (evict_expired) while it holds connections.
awaitable<void> sweep_upstream_pool(ConnectionLimiter* limiter, clock::duration max_idle);

}  // namespace vaultgate::net
