#include "net/forward/h2_origin_stream.hpp"

#include "net/forward/h2_origin.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/secret.hpp"

#include <charconv>

namespace vaultgate::net {

H2OriginStream::H2OriginStream(std::shared_ptr<H2OriginConnection> conn, asio::any_io_executor ex)
    : conn_(std::move(conn)), timer_(ex), write_timer_(std::move(ex)) {}

H2OriginStream::~H2OriginStream() {
    // Dropped before it ended (the exchange failed or was cut): the origin
    // stops, and nghttp2 no longer calls back into this object.
    if (id_ > 0) {
        if (!closed_) nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_CANCEL);
        nghttp2_session_set_stream_user_data(conn_->session(), id_, nullptr);
        if (const std::size_t left = body_.unconsumed()) nghttp2_session_consume_connection(conn_->session(), left);
        conn_->want_write();
    }
    for (auto* list : {&block_, &fields_, &trailers_})
        for (Header& h : *list) wipe_string(h.value);
}

awaitable<bool> H2OriginStream::wait_until(asio::steady_timer& timer, clock::time_point deadline) {
    timer.expires_at(deadline);
    co_await timer.async_wait(use_tuple);
    co_return clock::now() < deadline;
}

awaitable<bool> H2OriginStream::write(std::string_view piece, clock::duration idle) {
    if (closed_) co_return false;
    if (out_.append(piece)) nghttp2_session_resume_data(conn_->session(), id_);
    conn_->want_write();
    const auto deadline = clock::now() + idle;
    while (!closed_ && out_.full()) {
        const bool in_time = co_await wait_until(write_timer_, deadline);
        if (!in_time && out_.full()) co_return false;
    }
    co_return !closed_;
}

void H2OriginStream::finish(std::vector<Header> trailers) {
    if (closed_ || out_.finished()) return;
    if (out_.finish(std::move(trailers))) nghttp2_session_resume_data(conn_->session(), id_);
    conn_->want_write();
}

void H2OriginStream::reset(std::uint32_t code) {
    if (closed_) return;
    nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, code);
    closed_ = true;
    conn_->want_write();
    wake();
}

void H2OriginStream::cancel(boost::system::error_code&) { reset(NGHTTP2_CANCEL); }

awaitable<OriginHead> H2OriginStream::read_head(clock::duration timeout) {
    const auto deadline = clock::now() + timeout;
    for (;;) {
        if (too_large_) co_return OriginHead::too_large;
        if (status_ != 0) co_return OriginHead::ready;
        if (closed_) co_return OriginHead::reset;
        if (!co_await wait_until(timer_, deadline) && status_ == 0 && !closed_) co_return OriginHead::timed_out;
    }
}

awaitable<h2::BodyState> H2OriginStream::read_body(clock::duration idle) {
    const auto deadline = clock::now() + idle;
    for (;;) {
        if (body_.unconsumed() > 0) co_return h2::BodyState::data;
        if (body_.ended()) co_return h2::BodyState::end;
        if (closed_) co_return h2::BodyState::closed;
        const bool in_time = co_await wait_until(timer_, deadline);
        if (!in_time && body_.unconsumed() == 0 && !body_.ended() && !closed_) co_return h2::BodyState::timed_out;
    }
}

void H2OriginStream::consume_body(std::size_t n) {
    n = body_.consume(n);
    if (n == 0) return;
    // After the stream closed this gives back the connection's window only.
    nghttp2_session_consume(conn_->session(), id_, n);
    conn_->want_write();
}

void H2OriginStream::on_field(std::string_view name, std::string_view value, std::size_t header_bytes,
                              std::size_t header_count) {
    if (block_too_large_) return;
    block_bytes_ += name.size() + value.size() + 32;
    if (block_bytes_ > header_bytes || block_.size() >= header_count) {
        // Counted but no longer kept: a bomb of a head costs nothing but time.
        block_too_large_ = true;
        block_.clear();
        return;
    }
    if (name == ":status") {
        std::from_chars(value.data(), value.data() + value.size(), block_status_);
        return;
    }
    // nghttp2 refuses CR, LF and NUL; HTTP/1.1's rules refuse every control byte but tab.
    if (!validation::is_header_value_text(value)) return;
    block_.push_back({std::string(name), std::string(value)});
}

void H2OriginStream::on_headers_end() {
    const bool head = status_ == 0;
    const int status = std::exchange(block_status_, 0);
    std::vector<Header> block = std::move(block_);
    block_.clear();
    block_bytes_ = 0;
    if (std::exchange(block_too_large_, false)) {
        if (head) too_large_ = true;
        wake();
        return;
    }
    if (!head) {
        trailers_ = std::move(block);
    } else if (status >= 200) {  // 1xx heads go nowhere: vaultgate answers Expect itself
        status_ = status;
        fields_ = std::move(block);
    }
    wake();
}

void H2OriginStream::on_data(const std::uint8_t* data, std::size_t len) {
    body_.append(data, len);
    wake();
}

void H2OriginStream::on_end_stream() {
    body_.end();
    wake();
}

void H2OriginStream::on_close(std::uint32_t code) {
    if (!closed_) error_code_ = code;
    closed_ = true;
    wake();
}

ssize_t H2OriginStream::read_request(std::uint8_t* buf, std::size_t length, std::uint32_t* flags) {
    const ssize_t n = out_.read(conn_->session(), id_, buf, length, flags);
    wake();  // room for the coroutine's next piece
    return n;
}

}  // namespace vaultgate::net
