#pragma once
// The server side of an HTTP/2 connection over TLS (RFC 9113), on nghttp2:
// frames in and out, HPACK, flow control, and the checks RFC 9113 sections
// 8.1-8.3 make of a request (nghttp2's HTTP messaging rules, plus vaultgate's
// stricter field rules). Each request whose head is complete is handed to the
// caller as an H2Stream, served by a coroutine of its own; the connection
// ends once the client or a guard ends it and every stream's coroutine is done.
//
// Guards (flood_guard.hpp) end the connection with GOAWAY ENHANCE_YOUR_CALM;
// memory is bounded by the stream count, the header list size and the
// flow-control windows.
#include "net/h2/flood_guard.hpp"
#include "net/h2/h2_stream.hpp"
#include "net/io/tls_socket.hpp"
#include "net/io/types.hpp"
#include "net/io/watchdog.hpp"

#include <nghttp2/nghttp2.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::net::h2 {

struct H2ServerLimits {
    std::uint32_t max_concurrent_streams = 100;
    std::size_t header_bytes = 65536;  // decoded field bytes per request, as SETTINGS_MAX_HEADER_LIST_SIZE counts
    std::size_t header_count = 100;
    std::uint32_t stream_window = 256 * 1024;       // request body bytes buffered per stream
    std::uint32_t connection_window = 1024 * 1024;  // ... and per connection
    clock::duration idle_timeout = std::chrono::seconds(60);
    FloodLimits floods;
};

class H2ServerConnection {
public:
    using StreamHandler = std::function<void(std::shared_ptr<H2Stream>)>;

    // `watchdog` watches the client's socket (a drain or a revoked session kills it).
    H2ServerConnection(tls_stream& client, Watchdog& watchdog, const H2ServerLimits& limits,
                       const std::atomic<bool>& draining);
    H2ServerConnection(const H2ServerConnection&) = delete;
    H2ServerConnection& operator=(const H2ServerConnection&) = delete;
    ~H2ServerConnection();

    // Serves the connection; `on_request` starts a coroutine per request and
    // calls stream_done() when it ends. Returns when all is over.
    awaitable<void> run(StreamHandler on_request);
    void stream_done();

    // Why a guard ended the connection, for the diagnostic log; empty if none did.
    std::string_view calm_reason() const { return calm_reason_; }

    // Without I/O (run() does both; the fuzzer calls them itself): feeds
    // bytes read from the client, and takes the frames to send.
    void set_handler(StreamHandler on_request) { on_request_ = std::move(on_request); }
    void receive(const char* data, std::size_t n);
    std::string take_output();

    // For H2Stream: the session, and a wake-up for the writer.
    nghttp2_session* session() { return session_; }
    void want_write();

private:
    friend struct Callbacks;
    void collect_output();
    awaitable<void> writer();
    awaitable<void> reader();
    awaitable<void> idle_check();
    // Queues GOAWAY with `code` and stops reading.
    void terminate(std::uint32_t code, std::string_view reason);
    // Ends every stream still open (their coroutines see closed()).
    void close_all_streams();
    // Nothing more to send and nothing more to read.
    bool over() const;

    tls_stream& client_;
    Watchdog& watchdog_;
    H2ServerLimits limits_;
    const std::atomic<bool>& draining_;
    nghttp2_session* session_ = nullptr;
    std::map<std::int32_t, std::shared_ptr<H2Stream>> streams_;
    std::vector<std::shared_ptr<H2Stream>> ready_;  // requests complete, not handed on yet
    StreamHandler on_request_;
    asio::steady_timer write_wake_;
    asio::steady_timer done_wake_;
    asio::steady_timer idle_timer_;
    FloodGuard floods_;
    std::size_t running_ = 0;  // stream coroutines not finished yet
    std::size_t tasks_ = 0;    // the reader and the idle check, while they run
    bool reading_ = true;
    bool stopping_ = false;
    bool goaway_sent_ = false;  // a graceful GOAWAY (drain)
    bool dead_ = false;         // terminate(): only final_ goes out, nghttp2 is not asked again
    bool broken_ = false;       // the socket failed: nothing more can be sent
    clock::time_point last_active_;
    std::string calm_reason_;
    std::string out_;    // frames to send
    std::string final_;  // the GOAWAY of terminate()
};

}  // namespace vaultgate::net::h2
