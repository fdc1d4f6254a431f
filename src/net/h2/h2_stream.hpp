#pragma once
// One stream of an HTTP/2 connection the client opened (H2ServerConnection):
// the request as nghttp2 decoded it, its body as it arrives, and the response
// the stream's coroutine sends back. Everything runs on the connection's
// thread; the coroutine waits on the stream's timer, which the connection
// cancels whenever the stream has news (body bytes, its end, a reset, room to
// write).
//
// The body's flow-control window is returned only as the coroutine passes
// the bytes on (consume_body), so a stream buffers at most its window, and a
// connection at most the connection window. The response is held to
// `response_buffer_bytes` before write() waits for the client to take it.
#include "net/h2/stream_buffers.hpp"
#include "net/io/types.hpp"
#include "net/io/watchdog.hpp"
#include "vaultgate/http/message.hpp"

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::net::h2 {

class H2ServerConnection;

// The request's fields as they came: pseudo-fields apart, the rest in order.
struct H2Request {
    std::string method;
    std::string scheme;
    std::string authority;
    std::string path;
    bool has_protocol = false;  // :protocol (extended CONNECT), which vaultgate does not offer
    std::vector<Header> fields;
    bool too_large = false;      // past the header list size or field count: answered 431
    std::string_view malformed;  // set: refused with RST_STREAM PROTOCOL_ERROR, never forwarded
    std::size_t bytes = 0;    // decoded field bytes (name + value + 32 each, as SETTINGS_MAX_HEADER_LIST_SIZE counts)
    bool end_stream = false;  // the HEADERS frame ended the stream: no body
};

// What read_body found.
enum class BodyState { data, end, closed, timed_out };

class H2Stream {
public:
    static constexpr std::size_t response_buffer_bytes = OutgoingBody::buffer_bytes;

    H2Stream(H2ServerConnection& conn, std::int32_t id, asio::any_io_executor ex);
    H2Stream(const H2Stream&) = delete;
    H2Stream& operator=(const H2Stream&) = delete;
    ~H2Stream();

    std::int32_t id() const { return id_; }
    asio::any_io_executor executor() { return timer_.get_executor(); }
    H2Request& request() { return request_; }
    // Reset by either side, or the connection ended: nothing more goes either way.
    bool closed() const { return closed_; }

    // Waits until body bytes are buffered (body_view), the body ended, the
    // stream closed, or nothing came for `idle`.
    awaitable<BodyState> read_body(clock::duration idle);
    std::string_view body_view() const { return body_.view(); }
    // The coroutine passed `n` body bytes on: the client may send as many more.
    void consume_body(std::size_t n);

    // The response head; `end_stream` when no body follows. False when the stream is gone.
    bool respond(int status, const std::vector<Header>& fields, bool end_stream);
    // A 100 (Continue) before the final response.
    void send_continue();
    // Queues a body piece; waits while more than response_buffer_bytes are
    // queued. False when the stream closed or the client took nothing for `idle`.
    awaitable<bool> write(std::string_view piece, clock::duration idle);
    // Ends the body (with `trailers`, when given, as the last HEADERS frame).
    void finish(std::vector<Header> trailers = {});
    // The request's trailers (a HEADERS frame after its DATA), once the body ended.
    std::vector<Header>& request_trailers() { return request_trailers_; }
    // Ends the stream with RST_STREAM `code` (an error after the head was sent, or a refused request).
    void reset(std::uint32_t code);
    // The serving coroutine is done (answered, refused, failed): body bytes
    // the client still sends are dropped and their window given back, so an
    // unread body cannot stall the connection's other streams.
    void discard_body();

    // Killed when the stream closes early: it cancels the stream's upstream socket.
    void set_watchdog(std::shared_ptr<Watchdog> watchdog) { watchdog_ = std::move(watchdog); }

    // From the connection's nghttp2 callbacks.
    void on_field(std::string_view name, std::string_view value);
    void on_trailer(std::string_view name, std::string_view value);
    void on_data(const std::uint8_t* data, std::size_t len);
    void on_end_stream();
    // The stream ended (as nghttp2 sees it): a coroutine still serving it stops.
    void on_close();
    // Body bytes received but never passed on: the connection window wants them back.
    std::size_t unconsumed() const { return body_.unconsumed(); }
    // The data source of the response body.
    ssize_t read_response(std::uint8_t* buf, std::size_t length, std::uint32_t* flags);

private:
    void wake() {
        timer_.cancel();
        write_timer_.cancel();
    }
    // Waits on `timer` for wake() or the deadline: false once the deadline passed.
    awaitable<bool> wait_until(asio::steady_timer& timer, clock::time_point deadline);

    H2ServerConnection* conn_;
    std::int32_t id_;
    H2Request request_;
    // One timer per direction: the body that arrives and the one that
    // leaves may be waited for at once (full duplex), and setting a timer's
    // expiry cancels the other wait.
    asio::steady_timer timer_;
    asio::steady_timer write_timer_;
    std::shared_ptr<Watchdog> watchdog_;
    bool closed_ = false;
    IncomingBody body_;  // the request's
    bool discarding_ = false;
    std::vector<Header> request_trailers_;
    OutgoingBody out_;  // the response's
};

}  // namespace vaultgate::net::h2
