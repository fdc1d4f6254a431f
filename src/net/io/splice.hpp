#pragma once
// Byte pumps in both directions between two streams: CONNECT tunnels (plain
// TCP) and WebSocket after a 101 (TLS on both sides). Two copy loops over
// shared state; when one side ends, the other is told, so neither hangs.
#include "net/io/tls_socket.hpp"
#include "net/io/types.hpp"
#include "net/io/watchdog.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <cstdint>
#include <memory>

namespace vaultgate::net {

// Each direction's copy buffer.
inline constexpr std::size_t splice_buffer_bytes = 65536;

struct SpliceCounters {
    std::uint64_t up = 0;    // client -> upstream
    std::uint64_t down = 0;  // upstream -> client
};

namespace detail {

inline void finish_sending(tcp::socket& s) {
    error_code ignored;
    s.shutdown(tcp::socket::shutdown_send, ignored);
}
inline void finish_sending(tls_stream& s) {
    // A TLS half-close is not something peers expect; cancel instead so the
    // other loop ends too.
    error_code ignored;
    s.next_layer().cancel(ignored);
}
inline void abort_reading(tcp::socket& s) {
    error_code ignored;
    s.cancel(ignored);
}
inline void abort_reading(tls_stream& s) { abort_reading(s.next_layer()); }

template <class From, class To>
awaitable<void> pump(From& from, To& to, std::uint64_t& counter, Watchdog& watchdog, clock::duration idle,
                     std::size_t buffer_size) {
    std::unique_ptr<char[]> buf(new char[buffer_size]);
    for (;;) {
        watchdog.arm(idle);
        auto [rec, n] = co_await from.async_read_some(asio::buffer(buf.get(), buffer_size), use_tuple);
        if (n > 0) {
            auto [wec, written] = co_await asio::async_write(to, asio::buffer(buf.get(), n), use_tuple);
            counter += written;
            if (wec) {
                abort_reading(from);
                co_return;
            }
        }
        if (rec) {
            if (rec == asio::error::eof)
                finish_sending(to);
            else
                abort_reading(to);
            co_return;
        }
    }
}

}  // namespace detail

// Runs until both directions have ended. `prefix_up` bytes (already read from
// the client) are sent upstream first.
template <class Client, class Upstream>
awaitable<void> splice(Client& client, Upstream& upstream, Watchdog& watchdog, clock::duration idle,
                       SpliceCounters& counters, std::size_t buffer_size = splice_buffer_bytes) {
    using namespace asio::experimental::awaitable_operators;
    co_await (detail::pump(client, upstream, counters.up, watchdog, idle, buffer_size) &&
              detail::pump(upstream, client, counters.down, watchdog, idle, buffer_size));
}

}  // namespace vaultgate::net
