#pragma once
// One request on an HTTP/2 origin connection (H2OriginConnection): the body
// vaultgate sends, and the response as it arrives (head, DATA, trailers).
// Everything runs on the connection's thread; the exchange's coroutine waits
// on the stream's timer, which the connection cancels whenever the stream has
// news (its head, body bytes, the end, a reset, room to write).
//
// A watchdog may watch the stream as it watches a socket (cancel()): a
// client that resets, a drain, or a revoked session then resets the stream.
#include "net/h2/h2_stream.hpp"
#include "net/h2/stream_buffers.hpp"
#include "net/io/types.hpp"
#include "vaultgate/http/message.hpp"

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::net {

class H2OriginConnection;

// What read_head found.
enum class OriginHead { ready, reset, too_large, timed_out };

class H2OriginStream {
public:
    H2OriginStream(std::shared_ptr<H2OriginConnection> conn, asio::any_io_executor ex);
    H2OriginStream(const H2OriginStream&) = delete;
    H2OriginStream& operator=(const H2OriginStream&) = delete;
    ~H2OriginStream();

    std::int32_t id() const { return id_; }
    void set_id(std::int32_t id) { id_ = id; }
    // Reset by either side, or the connection ended.
    bool closed() const { return closed_; }
    // The origin's RST_STREAM or GOAWAY code when it ended the stream early.
    std::uint32_t error_code() const { return error_code_; }

    // The request body: a piece queued (waits while more than
    // OutgoingBody::buffer_bytes are queued); false when the stream closed or
    // the origin took nothing for `idle`.
    awaitable<bool> write(std::string_view piece, clock::duration idle);
    // Ends the request body, with `trailers` as the last HEADERS frame when given.
    void finish(std::vector<Header> trailers = {});
    // Ends the stream with RST_STREAM `code` (the request was cut short).
    void reset(std::uint32_t code);
    // For a watchdog: resets the stream (CANCEL) and wakes its coroutine.
    void cancel(boost::system::error_code&);

    // Waits for the final response head (1xx heads are skipped).
    awaitable<OriginHead> read_head(clock::duration timeout);
    int status() const { return status_; }
    std::vector<Header>& fields() { return fields_; }
    // The response body, as H2Stream's request body (h2::BodyState).
    awaitable<h2::BodyState> read_body(clock::duration idle);
    std::string_view body_view() const { return body_.view(); }
    void consume_body(std::size_t n);
    // The response's trailers, complete once read_body said `end`.
    std::vector<Header>& trailers() { return trailers_; }

    // From the connection's nghttp2 callbacks.
    void on_field(std::string_view name, std::string_view value, std::size_t header_bytes, std::size_t header_count);
    void on_headers_end();
    void on_data(const std::uint8_t* data, std::size_t len);
    void on_end_stream();
    void on_close(std::uint32_t code);
    std::size_t unconsumed() const { return body_.unconsumed(); }
    ssize_t read_request(std::uint8_t* buf, std::size_t length, std::uint32_t* flags);
    h2::OutgoingBody& request_body() { return out_; }

private:
    void wake() {
        timer_.cancel();
        write_timer_.cancel();
    }
    // Waits on `timer` for wake() or the deadline: false once the deadline passed.
    awaitable<bool> wait_until(asio::steady_timer& timer, clock::time_point deadline);

    std::shared_ptr<H2OriginConnection> conn_;  // kept while the exchange holds the stream
    std::int32_t id_ = -1;
    // One timer per direction: the body that arrives and the one that
    // leaves may be waited for at once (full duplex), and setting a timer's
    // expiry cancels the other wait.
    asio::steady_timer timer_;
    asio::steady_timer write_timer_;
    bool closed_ = false;
    std::uint32_t error_code_ = 0;
    h2::OutgoingBody out_;  // the request's body
    // The block being received: a head (1xx or final) until the final one, then trailers.
    int block_status_ = 0;
    std::size_t block_bytes_ = 0;
    bool block_too_large_ = false;
    std::vector<Header> block_;
    int status_ = 0;  // the final head's, once complete
    bool too_large_ = false;
    std::vector<Header> fields_;
    std::vector<Header> trailers_;
    h2::IncomingBody body_;  // the response's
};

}  // namespace vaultgate::net
