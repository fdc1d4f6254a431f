#include "net/h2/h2_stream.hpp"

#include "net/h2/callback_guard.hpp"
#include "net/h2/h2_server.hpp"
#include "vaultgate/util/secret.hpp"

#include <algorithm>
#include <cstring>

namespace vaultgate::net::h2 {

namespace {

// nghttp2's name-value pairs pointing into `fields` (names already lower case).
std::vector<nghttp2_nv> to_nv(const std::vector<Header>& fields, std::string_view status = {}) {
    std::vector<nghttp2_nv> nv;
    nv.reserve(fields.size() + 1);
    auto add = [&](std::string_view name, std::string_view value) {
        nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                      NGHTTP2_NV_FLAG_NONE});
    };
    if (!status.empty()) add(":status", status);
    for (const Header& h : fields) add(h.name, h.value);
    return nv;
}

ssize_t read_response_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                           nghttp2_data_source* source, void*) {
    return static_cast<H2Stream*>(source->ptr)->read_response(buf, length, flags);
}

}  // namespace

H2Stream::H2Stream(H2ServerConnection& conn, std::int32_t id, asio::any_io_executor ex)
    : conn_(&conn), id_(id), timer_(std::move(ex)) {}

H2Stream::~H2Stream() {
    // The body may hold what the client sent to be injected next to; the
    // response what the origin answered.
    wipe_string(body_);
    wipe_string(out_);
}

awaitable<bool> H2Stream::wait_until(clock::time_point deadline) {
    timer_.expires_at(deadline);
    co_await timer_.async_wait(use_tuple);
    co_return clock::now() < deadline;
}

awaitable<BodyState> H2Stream::read_body(clock::duration idle) {
    const auto deadline = clock::now() + idle;
    for (;;) {
        if (closed_) co_return BodyState::closed;
        if (body_read_ < body_.size()) co_return BodyState::data;
        if (body_ended_) co_return BodyState::end;
        const bool in_time = co_await wait_until(deadline);
        if (!in_time && body_read_ == body_.size() && !body_ended_ && !closed_) co_return BodyState::timed_out;
    }
}

void H2Stream::consume_body(std::size_t n) {
    n = std::min(n, body_.size() - body_read_);
    body_read_ += n;
    if (body_read_ == body_.size()) {
        wipe_string(body_);
        body_.clear();
        body_read_ = 0;
    }
    if (closed_ || n == 0) return;
    nghttp2_session_consume(conn_->session(), id_, n);
    conn_->want_write();
}

bool H2Stream::respond(int status, const std::vector<Header>& fields, bool end_stream) {
    if (closed_) return false;
    const std::string code = std::to_string(status);
    const auto nv = to_nv(fields, code);
    nghttp2_data_provider provider{};
    provider.source.ptr = this;
    provider.read_callback = no_throw<&read_response_body>;
    const int rc =
        nghttp2_submit_response(conn_->session(), id_, nv.data(), nv.size(), end_stream ? nullptr : &provider);
    out_finished_ = end_stream;
    conn_->want_write();
    return rc == 0;
}

void H2Stream::send_continue() {
    if (closed_) return;
    const auto nv = to_nv({}, "100");
    nghttp2_submit_headers(conn_->session(), NGHTTP2_FLAG_NONE, id_, nullptr, nv.data(), nv.size(), nullptr);
    conn_->want_write();
}

awaitable<bool> H2Stream::write(std::string_view piece, clock::duration idle) {
    if (closed_) co_return false;
    out_.append(piece);
    if (deferred_) {
        deferred_ = false;
        nghttp2_session_resume_data(conn_->session(), id_);
    }
    conn_->want_write();
    const auto deadline = clock::now() + idle;
    while (!closed_ && out_.size() - out_sent_ > response_buffer_bytes) {
        const bool in_time = co_await wait_until(deadline);
        if (!in_time && out_.size() - out_sent_ > response_buffer_bytes) co_return false;
    }
    co_return !closed_;
}

void H2Stream::finish(std::vector<Header> trailers) {
    if (closed_ || out_finished_) return;
    out_finished_ = true;
    trailers_ = std::move(trailers);
    if (deferred_) {
        deferred_ = false;
        nghttp2_session_resume_data(conn_->session(), id_);
    }
    conn_->want_write();
}

void H2Stream::reset(std::uint32_t code) {
    if (closed_) return;
    nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, code);
    conn_->want_write();
}

ssize_t H2Stream::read_response(std::uint8_t* buf, std::size_t length, std::uint32_t* flags) {
    const std::size_t n = std::min(length, out_.size() - out_sent_);
    std::memcpy(buf, out_.data() + out_sent_, n);
    out_sent_ += n;
    if (out_sent_ == out_.size()) {
        wipe_string(out_);
        out_.clear();
        out_sent_ = 0;
    }
    wake();  // room for the coroutine's next piece
    if (n == 0 && !out_finished_) {
        deferred_ = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (out_finished_ && out_.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!trailers_.empty()) {
            const auto nv = to_nv(trailers_);
            if (nghttp2_submit_trailer(conn_->session(), id_, nv.data(), nv.size()) == 0)
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }
    }
    return static_cast<ssize_t>(n);
}

void H2Stream::on_field(std::string_view name, std::string_view value) {
    request_.bytes += name.size() + value.size() + 32;
    if (name == ":method")
        request_.method = value;
    else if (name == ":scheme")
        request_.scheme = value;
    else if (name == ":authority")
        request_.authority = value;
    else if (name == ":path")
        request_.path = value;
    else if (name == ":protocol")
        request_.has_protocol = true;
    else
        request_.fields.push_back({std::string(name), std::string(value)});
}

void H2Stream::on_data(const std::uint8_t* data, std::size_t len) {
    if (discarding_) {  // nobody will read it: the windows come back at once
        nghttp2_session_consume(conn_->session(), id_, len);
        conn_->want_write();
        return;
    }
    body_.append(reinterpret_cast<const char*>(data), len);
    wake();
}

void H2Stream::discard_body() {
    discarding_ = true;
    consume_body(unconsumed());
}

void H2Stream::on_end_stream() {
    body_ended_ = true;
    wake();
}

void H2Stream::on_close() {
    if (closed_) return;
    closed_ = true;
    // A stream that ends before its response did (a reset): its upstream
    // exchange is cut, so the origin never sees the rest of the request.
    if (watchdog_ && !out_finished_) watchdog_->kill();
    wake();
}

}  // namespace vaultgate::net::h2
