#include "net/h2/h2_stream.hpp"

#include "net/h2/callback_guard.hpp"
#include "net/h2/h2_server.hpp"
#include "vaultgate/util/secret.hpp"

#include <algorithm>
#include <cstring>

namespace vaultgate::net::h2 {

namespace {

ssize_t read_response_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                           nghttp2_data_source* source, void*) {
    return static_cast<H2Stream*>(source->ptr)->read_response(buf, length, flags);
}

}  // namespace

H2Stream::H2Stream(H2ServerConnection& conn, std::int32_t id, asio::any_io_executor ex)
    : conn_(&conn), id_(id), timer_(ex), write_timer_(std::move(ex)) {}

H2Stream::~H2Stream() {
    for (Header& h : request_trailers_) wipe_string(h.value);
}

awaitable<bool> H2Stream::wait_until(asio::steady_timer& timer, clock::time_point deadline) {
    timer.expires_at(deadline);
    co_await timer.async_wait(use_tuple);
    co_return clock::now() < deadline;
}

awaitable<BodyState> H2Stream::read_body(clock::duration idle) {
    const auto deadline = clock::now() + idle;
    for (;;) {
        if (closed_) co_return BodyState::closed;
        if (body_.unconsumed() > 0) co_return BodyState::data;
        if (body_.ended()) co_return BodyState::end;
        const bool in_time = co_await wait_until(timer_, deadline);
        if (!in_time && body_.unconsumed() == 0 && !body_.ended() && !closed_) co_return BodyState::timed_out;
    }
}

void H2Stream::consume_body(std::size_t n) {
    n = body_.consume(n);
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
    if (end_stream) out_.finish_empty();
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
    if (out_.append(piece)) nghttp2_session_resume_data(conn_->session(), id_);
    conn_->want_write();
    const auto deadline = clock::now() + idle;
    while (!closed_ && out_.full()) {
        const bool in_time = co_await wait_until(write_timer_, deadline);
        if (!in_time && out_.full()) co_return false;
    }
    co_return !closed_;
}

void H2Stream::finish(std::vector<Header> trailers) {
    if (closed_ || out_.finished()) return;
    if (out_.finish(std::move(trailers))) nghttp2_session_resume_data(conn_->session(), id_);
    conn_->want_write();
}

void H2Stream::reset(std::uint32_t code) {
    if (closed_) return;
    nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, code);
    conn_->want_write();
}

ssize_t H2Stream::read_response(std::uint8_t* buf, std::size_t length, std::uint32_t* flags) {
    const ssize_t n = out_.read(conn_->session(), id_, buf, length, flags);
    wake();  // room for the coroutine's next piece
    return n;
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

void H2Stream::on_trailer(std::string_view name, std::string_view value) {
    request_trailers_.push_back({std::string(name), std::string(value)});
}

void H2Stream::on_data(const std::uint8_t* data, std::size_t len) {
    if (discarding_) {  // nobody will read it: the windows come back at once
        nghttp2_session_consume(conn_->session(), id_, len);
        conn_->want_write();
        return;
    }
    body_.append(data, len);
    wake();
}

void H2Stream::discard_body() {
    discarding_ = true;
    consume_body(unconsumed());
}

void H2Stream::on_end_stream() {
    body_.end();
    wake();
}

void H2Stream::on_close() {
    if (closed_) return;
    closed_ = true;
    // A stream that ends before its response did (a reset): its upstream
    // exchange is cut, so the origin never sees the rest of the request.
    if (watchdog_ && !out_.finished()) watchdog_->kill();
    wake();
}

}  // namespace vaultgate::net::h2
