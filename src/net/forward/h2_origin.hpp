#pragma once
// The client side of an HTTP/2 connection to a bound origin that chose h2 by
// ALPN, on nghttp2: one connection per (session, origin) per I/O thread
// (h2_origin_registry.hpp) carries the requests of every client connection
// of that session, each as a stream. It runs a reader and a writer coroutine
// of its own, and ends when the origin ends it (GOAWAY, a close), on a
// protocol error, at a drain, or after idling `idle_timeout` with no stream.
//
// Bounds: the response windows (per stream and per connection) are given
// back only as the exchanges pass the bytes on; a response head or trailer
// block past `header_bytes` fails its stream; server push is off
// (SETTINGS_ENABLE_PUSH 0), so a PUSH_PROMISE is a connection error.
#include "net/forward/h2_origin_stream.hpp"
#include "net/io/tls_socket.hpp"
#include "net/io/types.hpp"
#include "net/io/watchdog.hpp"

#include <nghttp2/nghttp2.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::net {

struct H2OriginLimits {
    std::size_t header_bytes = 65536;  // a response head or trailer block, as SETTINGS_MAX_HEADER_LIST_SIZE counts
    std::size_t header_count = 100;
    std::uint32_t stream_window = 256 * 1024;       // response bytes buffered per stream
    std::uint32_t connection_window = 1024 * 1024;  // ... and per connection
    clock::duration idle_timeout = std::chrono::seconds(60);
};

class H2OriginConnection : public std::enable_shared_from_this<H2OriginConnection> {
public:
    H2OriginConnection(tls_stream stream, const H2OriginLimits& limits, const std::atomic<bool>& draining);
    H2OriginConnection(const H2OriginConnection&) = delete;
    H2OriginConnection& operator=(const H2OriginConnection&) = delete;
    ~H2OriginConnection();

    // Sends the preface and SETTINGS, and starts the reader and the writer.
    void start();
    // Open, no GOAWAY from the origin, stream ids left.
    bool accepts_streams() const;
    // A new stream for a request: `fields` with the pseudo-fields first;
    // `sensitive` names a field HPACK must never index (the injected one).
    // With `with_body`, DATA follows (H2OriginStream::write and finish).
    // Null when the connection takes no more streams.
    std::shared_ptr<H2OriginStream> open(const std::vector<Header>& fields, std::string_view sensitive, bool with_body);

    // For H2OriginStream.
    nghttp2_session* session() { return session_; }
    void want_write();
    const H2OriginLimits& limits() const { return limits_; }

private:
    friend struct OriginCallbacks;
    awaitable<void> reader(std::shared_ptr<H2OriginConnection> self);
    awaitable<void> writer(std::shared_ptr<H2OriginConnection> self);
    // The connection failed or ended: every stream still open ends with
    // `code`, nothing more is read or sent.
    void fail(std::uint32_t code);
    bool over() const;

    tls_stream stream_;
    std::shared_ptr<Watchdog> watchdog_;  // times the writes
    H2OriginLimits limits_;
    const std::atomic<bool>& draining_;
    nghttp2_session* session_ = nullptr;
    std::map<std::int32_t, std::weak_ptr<H2OriginStream>> streams_;
    asio::steady_timer write_wake_;
    clock::time_point idle_since_;
    bool reading_ = true;
    bool dead_ = false;
    bool goaway_ = false;  // the origin or vaultgate ended it gracefully: no new streams
    std::string out_;
};

}  // namespace vaultgate::net
