#pragma once
// Idle upstream TLS connections kept for the next client connection of the same
// session to the same origin, so a sandbox that opens a new CONNECT per request
// does not pay a new upstream handshake each time. The key includes the session:
// a connection is never shared between sessions. One pool per I/O thread, so a
// connection is only used on the thread whose reactor it is registered with.
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

    // A healthy idle connection for key, or nothing. Stale ones are closed.
    std::optional<tls_stream> take(const std::string& key);
    // Keeps the connection for later (or closes it when the pool is full).
    void give(const std::string& key, tls_stream stream);

    static constexpr std::size_t max_per_key = 16;
    static constexpr std::size_t max_total = 512;
    // Shorter than common server keep-alive timeouts (nginx: 75 s), so a pooled
    // connection is rarely one the origin is about to close.
    static constexpr std::chrono::seconds max_idle{30};

private:
    struct Idle {
        tls_stream stream;
        clock::time_point since;
    };
    static bool usable(tls_stream& stream);
    void evict_expired();

    std::map<std::string, std::vector<Idle>> idle_;
    std::size_t total_ = 0;
};

// The pool of the calling I/O thread.
UpstreamPool& this_thread_upstream_pool();

}  // namespace vaultgate::net
