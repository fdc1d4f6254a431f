#include "net/h2/h2_server.hpp"

#include "net/h2/callback_guard.hpp"

#include "net/io/http_io.hpp"
#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <array>
#include <utility>

namespace vaultgate::net::h2 {

namespace {

constexpr std::size_t read_chunk = 16 * 1024;
constexpr std::size_t write_batch = 64 * 1024;
constexpr auto linger_time = std::chrono::seconds(1);

H2Stream* stream_of(nghttp2_session* session, std::int32_t id) {
    return static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session, id));
}

}  // namespace

// nghttp2's callbacks, with the connection as user data.
struct Callbacks {
    static H2ServerConnection& conn(void* user) { return *static_cast<H2ServerConnection*>(user); }

    // A guard tripped: the rest of what was read is not looked at.
    static int calm(H2ServerConnection& c, std::string_view reason) {
        c.terminate(NGHTTP2_ENHANCE_YOUR_CALM, reason);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }

    static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
        auto& c = conn(user);
        if (hd->type == NGHTTP2_HEADERS) c.floods_.headers_started();
        if (hd->type == NGHTTP2_CONTINUATION && c.floods_.continuation_exceeded())
            return calm(c, FloodGuard::name(Flood::continuation));
        return 0;
    }

    static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
        auto& c = conn(user);
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
        auto stream = std::make_shared<H2Stream>(c, frame->hd.stream_id, c.client_.get_executor());
        nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, stream.get());
        c.streams_[frame->hd.stream_id] = std::move(stream);
        return 0;
    }

    static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const std::uint8_t* name,
                         std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                         void* user) {
        auto& c = conn(user);
        H2Stream* s = stream_of(session, frame->hd.stream_id);
        if (!s) return 0;
        const std::string_view n(reinterpret_cast<const char*>(name), namelen);
        const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
        if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) return on_trailer(c, *s, n, v);
        H2Request& r = s->request();
        // nghttp2 refuses CR, LF and NUL; HTTP/1.1's rules refuse every control byte but tab.
        if (!validation::is_header_value_text(v)) r.malformed = "control byte in a field value";
        if (r.too_large) return 0;
        if (r.bytes + namelen + valuelen + 32 > c.limits_.header_bytes || r.fields.size() >= c.limits_.header_count) {
            // Counted but no longer kept: an HPACK bomb costs nothing but time.
            r.too_large = true;
            r.fields.clear();
            return 0;
        }
        s->on_field(n, v);
        return 0;
    }

    // A request's trailers (nghttp2 checked their form): kept for an HTTP/2
    // origin within a header list of their own; a field past it, or with a
    // control byte, is dropped (the request is under way, too late to refuse).
    static int on_trailer(H2ServerConnection& c, H2Stream& s, std::string_view n, std::string_view v) {
        std::size_t bytes = n.size() + v.size() + 32;
        for (const Header& h : s.request_trailers()) bytes += h.name.size() + h.value.size() + 32;
        if (bytes > c.limits_.header_bytes || s.request_trailers().size() >= c.limits_.header_count) return 0;
        if (validation::is_header_value_text(v)) s.on_trailer(n, v);
        return 0;
    }

    static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
        auto& c = conn(user);
        const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
        switch (frame->hd.type) {
            case NGHTTP2_HEADERS: {
                H2Stream* s = stream_of(session, frame->hd.stream_id);
                if (!s) return 0;
                if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
                    s->request().end_stream = end_stream;
                    if (!s->request().malformed.empty()) {
                        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                                  NGHTTP2_PROTOCOL_ERROR);
                        return 0;
                    }
                    c.ready_.push_back(c.streams_[frame->hd.stream_id]);
                }
                if (end_stream) s->on_end_stream();
                return 0;
            }
            case NGHTTP2_DATA:
                if (frame->hd.length == 0 && !end_stream && c.floods_.exceeded(Flood::empty_data))
                    return calm(c, FloodGuard::name(Flood::empty_data));
                if (end_stream)
                    if (H2Stream* s = stream_of(session, frame->hd.stream_id)) s->on_end_stream();
                return 0;
            case NGHTTP2_SETTINGS:
                if (!(frame->hd.flags & NGHTTP2_FLAG_ACK) && c.floods_.exceeded(Flood::settings))
                    return calm(c, FloodGuard::name(Flood::settings));
                return 0;
            case NGHTTP2_PING:
                if (!(frame->hd.flags & NGHTTP2_FLAG_ACK) && c.floods_.exceeded(Flood::ping))
                    return calm(c, FloodGuard::name(Flood::ping));
                return 0;
            case NGHTTP2_PRIORITY:
                if (c.floods_.exceeded(Flood::priority)) return calm(c, FloodGuard::name(Flood::priority));
                return 0;
            case NGHTTP2_RST_STREAM:
                if (c.floods_.exceeded(Flood::reset)) return calm(c, FloodGuard::name(Flood::reset));
                return 0;
            default:
                return 0;
        }
    }

    static int on_data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                             std::size_t len, void*) {
        H2Stream* s = stream_of(session, id);
        if (s && !s->closed())
            s->on_data(data, len);
        else
            nghttp2_session_consume_connection(session, len);  // nobody reads it: the window comes back now
        return 0;
    }

    static int on_stream_close(nghttp2_session* session, std::int32_t id, std::uint32_t, void* user) {
        auto& c = conn(user);
        auto it = c.streams_.find(id);
        if (it == c.streams_.end()) return 0;
        H2Stream& s = *it->second;
        if (const std::size_t left = s.unconsumed()) nghttp2_session_consume_connection(session, left);
        s.on_close();
        nghttp2_session_set_stream_user_data(session, id, nullptr);
        c.streams_.erase(it);
        return 0;
    }
};

H2ServerConnection::H2ServerConnection(tls_stream& client, Watchdog& watchdog, const H2ServerLimits& limits,
                                       const std::atomic<bool>& draining)
    : client_(client),
      watchdog_(watchdog),
      limits_(limits),
      draining_(draining),
      write_wake_(client.get_executor()),
      done_wake_(client.get_executor()),
      idle_timer_(client.get_executor()),
      floods_(limits.floods),
      last_active_(clock::now()) {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, no_throw<&Callbacks::on_begin_frame>);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, no_throw<&Callbacks::on_begin_headers>);
    nghttp2_session_callbacks_set_on_header_callback(cbs, no_throw<&Callbacks::on_header>);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, no_throw<&Callbacks::on_frame_recv>);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, no_throw<&Callbacks::on_data_chunk>);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, no_throw<&Callbacks::on_stream_close>);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    // nghttp2's own limits stay as a backstop behind the guards above.
    nghttp2_option_set_max_continuations(opt, limits.floods.continuations + 1);
    nghttp2_session_server_new2(&session_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);

    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits.stream_window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits.header_bytes)},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    };
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<std::int32_t>(limits.connection_window));
}

H2ServerConnection::~H2ServerConnection() {
    for (auto& [id, s] : streams_) s->on_close();
    nghttp2_session_del(session_);
}

void H2ServerConnection::want_write() { write_wake_.cancel(); }

void H2ServerConnection::stream_done() {
    --running_;
    watchdog_.set_idle(running_ == 0);
    // A drain lets the streams in flight finish, and takes no new ones.
    if (draining_.load(std::memory_order_relaxed) && !goaway_sent_) {
        goaway_sent_ = true;
        nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                              NGHTTP2_NO_ERROR, nullptr, 0);
    }
    done_wake_.cancel();
    want_write();
}

void H2ServerConnection::terminate(std::uint32_t code, std::string_view reason) {
    if (dead_) return;
    dead_ = true;
    reading_ = false;
    calm_reason_ = reason;
    // Written by hand: after a callback failure nghttp2's session sends nothing more.
    const std::int32_t last = nghttp2_session_get_last_proc_stream_id(session_);
    const unsigned char frame[17] = {0,
                                     0,
                                     8,
                                     NGHTTP2_GOAWAY,
                                     0,
                                     0,
                                     0,
                                     0,
                                     0,
                                     static_cast<unsigned char>((last >> 24) & 0x7f),
                                     static_cast<unsigned char>(last >> 16),
                                     static_cast<unsigned char>(last >> 8),
                                     static_cast<unsigned char>(last),
                                     static_cast<unsigned char>(code >> 24),
                                     static_cast<unsigned char>(code >> 16),
                                     static_cast<unsigned char>(code >> 8),
                                     static_cast<unsigned char>(code)};
    final_.assign(reinterpret_cast<const char*>(frame), sizeof frame);
    close_all_streams();
    want_write();
}

void H2ServerConnection::close_all_streams() {
    for (auto& [id, s] : streams_) s->on_close();
    for (auto& s : ready_) s->on_close();
}

bool H2ServerConnection::over() const {
    if (broken_) return true;
    if (dead_) return final_.empty();
    const bool write = nghttp2_session_want_write(session_) != 0;
    if (!reading_) return !write;
    return !write && !nghttp2_session_want_read(session_);
}

void H2ServerConnection::collect_output() {
    if (!dead_) {
        while (out_.size() < write_batch) {
            const std::uint8_t* data = nullptr;
            const ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                terminate(NGHTTP2_INTERNAL_ERROR, "h2_send_failed");
                break;
            }
            if (n == 0) break;
            out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
    }
    if (dead_ && !final_.empty()) {
        out_.append(final_);
        final_.clear();
    }
}

void H2ServerConnection::receive(const char* data, std::size_t n) {
    if (!reading_) return;
    last_active_ = clock::now();
    const ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(data), n);
    if (rv < 0 && !dead_) {
        // nghttp2's own flood limits, behind the guards; else a broken connection.
        if (rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)
            terminate(NGHTTP2_ENHANCE_YOUR_CALM, "flood");
        else
            terminate(NGHTTP2_PROTOCOL_ERROR, "");
    }
    for (auto& s : ready_) {
        if (s->closed()) continue;
        // Streams nghttp2 counts as closed whose coroutines have not
        // ended yet are bounded too.
        if (running_ >= 2 * std::size_t{limits_.max_concurrent_streams}) {
            s->reset(NGHTTP2_REFUSED_STREAM);
            continue;
        }
        ++running_;
        watchdog_.set_idle(false);
        on_request_(std::move(s));
    }
    ready_.clear();
    if (!nghttp2_session_want_read(session_)) reading_ = false;
    want_write();
}

std::string H2ServerConnection::take_output() {
    collect_output();
    return std::exchange(out_, std::string());
}

awaitable<void> H2ServerConnection::writer() {
    for (;;) {
        collect_output();
        if (!out_.empty()) {
            const error_code ec = co_await write_all(client_, out_, watchdog_, limits_.idle_timeout);
            watchdog_.disarm();
            out_.clear();
            if (ec) {
                broken_ = true;
                reading_ = false;
            }
            continue;
        }
        if (over()) break;
        write_wake_.expires_at(clock::time_point::max());
        co_await write_wake_.async_wait(use_tuple);
    }
}

awaitable<void> H2ServerConnection::reader() {
    std::array<char, read_chunk> buf;
    while (reading_) {
        auto [ec, n] = co_await read_some(client_, buf.data(), buf.size());
        if (n > 0) receive(buf.data(), n);
        if (ec) reading_ = false;
    }
    want_write();
    --tasks_;
    done_wake_.cancel();
}

awaitable<void> H2ServerConnection::idle_check() {
    while (!over() && !stopping_) {
        idle_timer_.expires_at(last_active_ + limits_.idle_timeout);
        co_await idle_timer_.async_wait(use_tuple);
        if (stopping_ || dead_) break;
        // Streams no coroutine serves (a client that never ends a body we
        // answered) do not keep an idle connection open.
        if (running_ == 0 && clock::now() - last_active_ >= limits_.idle_timeout) {
            nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
            want_write();
            break;
        }
        if (clock::now() - last_active_ >= limits_.idle_timeout) last_active_ = clock::now();
    }
    --tasks_;
    done_wake_.cancel();
}

awaitable<void> H2ServerConnection::run(StreamHandler on_request) {
    on_request_ = std::move(on_request);
    // The handshake's deadline ends here; from now on the watchdog times
    // writes only (the idle check times the rest), and a drain or a revoked
    // session still kills the connection through it.
    watchdog_.disarm();
    watchdog_.set_idle(true);
    auto ex = client_.get_executor();
    tasks_ = 2;
    asio::co_spawn(ex, reader(), asio::detached);
    asio::co_spawn(ex, idle_check(), asio::detached);
    co_await writer();
    // Over: the reader and the streams still running are cut.
    stopping_ = true;
    reading_ = false;
    error_code ignored;
    client_.next_layer().cancel(ignored);
    idle_timer_.cancel();
    close_all_streams();
    while (tasks_ > 0 || running_ > 0) {
        done_wake_.expires_at(clock::time_point::max());
        co_await done_wake_.async_wait(use_tuple);
    }
    // After a GOAWAY for abuse the client may still be sending: what it sends
    // is read and dropped for a moment, so that closing with unread bytes
    // (a TCP reset) does not destroy the GOAWAY before the client reads it.
    if (dead_ && !broken_) {
        std::array<char, read_chunk> sink;
        watchdog_.arm(linger_time);
        for (;;) {
            auto [ec, n] = co_await read_some(client_, sink.data(), sink.size());
            if (ec) break;
        }
        watchdog_.disarm();
    }
    if (!calm_reason_.empty()) log_info("h2: connection ended with GOAWAY ENHANCE_YOUR_CALM: " + calm_reason_);
}

}  // namespace vaultgate::net::h2
