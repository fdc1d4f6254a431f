#pragma once
// The two body buffers of an HTTP/2 stream, shared by both legs: the body
// that arrives (a request from a client, a response from an origin) and the
// body that leaves (a response to a client, a request to an origin).
//
// IncomingBody: DATA kept until the stream's coroutine passes it on; only
// then is the flow-control window given back (nghttp2_session_consume), so a
// stream holds at most its window. OutgoingBody: pieces queued by the
// coroutine and taken by nghttp2's data source as the peer's window allows,
// with optional trailers as the last HEADERS frame.
#include "vaultgate/http/message.hpp"

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate::net::h2 {

// nghttp2's name-value pairs pointing into `fields` (names already lower
// case), after a `:status` when one is given.
std::vector<nghttp2_nv> to_nv(const std::vector<Header>& fields, std::string_view status = {});

class IncomingBody {
public:
    IncomingBody() = default;
    IncomingBody(const IncomingBody&) = delete;
    IncomingBody& operator=(const IncomingBody&) = delete;
    ~IncomingBody();

    void append(const std::uint8_t* data, std::size_t len) { bytes_.append(reinterpret_cast<const char*>(data), len); }
    void end() { ended_ = true; }
    bool ended() const { return ended_; }
    std::string_view view() const { return std::string_view(bytes_).substr(read_); }
    std::size_t unconsumed() const { return bytes_.size() - read_; }
    // Marks up to `n` bytes passed on; returns how many were (for the window).
    std::size_t consume(std::size_t n);

private:
    std::string bytes_;  // received; the first read_ were passed on
    std::size_t read_ = 0;
    bool ended_ = false;
};

class OutgoingBody {
public:
    // Queued bytes past which the coroutine waits for the peer to take some.
    static constexpr std::size_t buffer_bytes = 64 * 1024;

    OutgoingBody() = default;
    OutgoingBody(const OutgoingBody&) = delete;
    OutgoingBody& operator=(const OutgoingBody&) = delete;
    ~OutgoingBody();

    // Both return true when nghttp2 must be told to resume the stream's data.
    bool append(std::string_view piece);
    bool finish(std::vector<Header> trailers);
    // No body at all follows the head.
    void finish_empty() { finished_ = true; }
    bool finished() const { return finished_; }
    bool full() const { return bytes_.size() - sent_ > buffer_bytes; }

    // nghttp2's data source for stream `id`: copies what is queued, defers
    // while nothing is, and submits the trailers after the last byte.
    ssize_t read(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                 std::uint32_t* flags);

private:
    std::string bytes_;  // queued; the first sent_ went to nghttp2
    std::size_t sent_ = 0;
    bool finished_ = false;
    bool deferred_ = false;  // the data source said "later": resume when more is queued
    std::vector<Header> trailers_;
};

}  // namespace vaultgate::net::h2
