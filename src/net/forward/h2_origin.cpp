#include "net/forward/h2_origin.hpp"

#include "net/h2/callback_guard.hpp"
#include "net/io/http_io.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <array>

namespace vaultgate::net {

namespace {

constexpr std::size_t origin_read_chunk = 16 * 1024;
constexpr std::size_t origin_write_batch = 64 * 1024;

H2OriginStream* origin_stream(nghttp2_session* session, std::int32_t id) {
    return static_cast<H2OriginStream*>(nghttp2_session_get_stream_user_data(session, id));
}

ssize_t read_request_body(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                          std::uint32_t* flags, nghttp2_data_source*, void*) {
    H2OriginStream* s = origin_stream(session, id);
    if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // its exchange is gone: the stream is reset
    return s->read_request(buf, length, flags);
}

}  // namespace

// nghttp2's callbacks, with the connection as user data.
struct OriginCallbacks {
    static H2OriginConnection& conn(void* user) { return *static_cast<H2OriginConnection*>(user); }

    static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const std::uint8_t* name,
                         std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                         void* user) {
        if (frame->hd.type != NGHTTP2_HEADERS) return 0;
        H2OriginStream* s = origin_stream(session, frame->hd.stream_id);
        if (!s) return 0;
        const auto& limits = conn(user).limits_;
        s->on_field(std::string_view(reinterpret_cast<const char*>(name), namelen),
                    std::string_view(reinterpret_cast<const char*>(value), valuelen), limits.header_bytes,
                    limits.header_count);
        return 0;
    }

    static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
        auto& c = conn(user);
        const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
        switch (frame->hd.type) {
            case NGHTTP2_HEADERS:
                if (H2OriginStream* s = origin_stream(session, frame->hd.stream_id)) {
                    s->on_headers_end();
                    if (end_stream) s->on_end_stream();
                }
                return 0;
            case NGHTTP2_DATA:
                if (end_stream)
                    if (H2OriginStream* s = origin_stream(session, frame->hd.stream_id)) s->on_end_stream();
                return 0;
            case NGHTTP2_GOAWAY:
                // Streams past its last id are closed by nghttp2 (REFUSED_STREAM); the rest finish.
                c.goaway_ = true;
                return 0;
            default:
                return 0;
        }
    }

    static int on_data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                             std::size_t len, void*) {
        if (H2OriginStream* s = origin_stream(session, id))
            s->on_data(data, len);
        else
            nghttp2_session_consume(session, id, len);  // nobody reads it: the window comes back now
        return 0;
    }

    // A request whose HEADERS never went out (reset while nghttp2 queued it
    // behind the origin's stream limit) gets no on_stream_close: forgotten here.
    static int on_frame_not_send(nghttp2_session* session, const nghttp2_frame* frame, int, void* user) {
        if (frame->hd.type != NGHTTP2_HEADERS) return 0;
        return on_stream_close(session, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM, user);
    }

    static int on_stream_close(nghttp2_session* session, std::int32_t id, std::uint32_t code, void* user) {
        auto& c = conn(user);
        if (H2OriginStream* s = origin_stream(session, id)) s->on_close(code);
        c.streams_.erase(id);
        if (c.streams_.empty()) c.idle_since_ = clock::now();
        return 0;
    }
};

H2OriginConnection::H2OriginConnection(tls_stream stream, const H2OriginLimits& limits,
                                       const std::atomic<bool>& draining)
    : stream_(std::move(stream)),
      watchdog_(std::make_shared<Watchdog>(stream_.get_executor())),
      limits_(limits),
      draining_(draining),
      write_wake_(stream_.get_executor()),
      idle_since_(clock::now()) {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, h2::no_throw<&OriginCallbacks::on_header>);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, h2::no_throw<&OriginCallbacks::on_frame_recv>);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2::no_throw<&OriginCallbacks::on_data_chunk>);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2::no_throw<&OriginCallbacks::on_stream_close>);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, h2::no_throw<&OriginCallbacks::on_frame_not_send>);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    // Windows come back only as the exchanges pass the bytes on (consume_body).
    nghttp2_option_set_no_auto_window_update(opt, 1);
    // nghttp2 itself refuses a header block past this (as a stream error).
    nghttp2_option_set_max_send_header_block_length(opt, 65536);
    nghttp2_session_client_new2(&session_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);

    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits.stream_window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits.header_bytes)},
    };
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<std::int32_t>(limits.connection_window));
}

H2OriginConnection::~H2OriginConnection() {
    watchdog_->stop();
    nghttp2_session_del(session_);
}

void H2OriginConnection::start() {
    watchdog_->start();
    watchdog_->watch(stream_.next_layer());
    auto ex = stream_.get_executor();
    asio::co_spawn(ex, reader(shared_from_this()), asio::detached);
    asio::co_spawn(ex, writer(shared_from_this()), asio::detached);
}

bool H2OriginConnection::accepts_streams() const {
    return !dead_ && !goaway_ && nghttp2_session_check_request_allowed(session_) != 0;
}

std::shared_ptr<H2OriginStream> H2OriginConnection::open(const std::vector<Header>& fields, std::string_view sensitive,
                                                         bool with_body) {
    if (!accepts_streams()) return nullptr;
    auto nv = h2::to_nv(fields);
    for (nghttp2_nv& f : nv) {
        const std::string_view name(reinterpret_cast<const char*>(f.name), f.namelen);
        if (name == sensitive || name == "authorization") f.flags = NGHTTP2_NV_FLAG_NO_INDEX;
    }
    auto stream = std::make_shared<H2OriginStream>(shared_from_this(), stream_.get_executor());
    nghttp2_data_provider provider{};
    provider.read_callback = h2::no_throw<&read_request_body>;
    const std::int32_t id =
        nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), with_body ? &provider : nullptr, stream.get());
    if (id < 0) return nullptr;
    stream->set_id(id);
    if (!with_body) stream->request_body().finish_empty();
    streams_[id] = stream;
    want_write();
    return stream;
}

void H2OriginConnection::want_write() { write_wake_.cancel(); }

void H2OriginConnection::fail(std::uint32_t code) {
    if (dead_) return;
    dead_ = true;
    reading_ = false;
    for (auto& [id, weak] : streams_)
        if (auto s = weak.lock()) s->on_close(code);
    streams_.clear();
    want_write();
}

bool H2OriginConnection::over() const {
    if (dead_) return true;
    if (nghttp2_session_want_write(session_)) return false;
    // nghttp2 wants nothing more once a GOAWAY went either way and no stream
    // is left, and at once after the GOAWAY of a connection error (a
    // PUSH_PROMISE among them): the streams still open then fail.
    if (!nghttp2_session_want_read(session_)) return true;
    return goaway_ && streams_.empty();
}

awaitable<void> H2OriginConnection::reader(std::shared_ptr<H2OriginConnection> self) {
    std::array<char, origin_read_chunk> buf;
    while (reading_) {
        auto [ec, n] = co_await read_some(stream_, buf.data(), buf.size());
        if (n > 0 && !dead_) {
            const ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(buf.data()), n);
            if (rv < 0) {
                log_debug(std::string("h2 origin: connection failed: ") + nghttp2_strerror(static_cast<int>(rv)));
                fail(NGHTTP2_INTERNAL_ERROR);
            }
            want_write();
        }
        if (ec) fail(NGHTTP2_INTERNAL_ERROR);
    }
    want_write();
}

awaitable<void> H2OriginConnection::writer(std::shared_ptr<H2OriginConnection> self) {
    for (;;) {
        while (!dead_ && out_.size() < origin_write_batch) {
            const std::uint8_t* data = nullptr;
            const ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n <= 0) {
                if (n < 0) fail(NGHTTP2_INTERNAL_ERROR);
                break;
            }
            out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
        if (!out_.empty()) {
            const error_code ec = co_await write_all(stream_, out_, *watchdog_, limits_.idle_timeout);
            watchdog_->disarm();
            out_.clear();
            if (ec) fail(NGHTTP2_INTERNAL_ERROR);
            continue;
        }
        if (over()) break;
        // No stream for the idle timeout, or a drain with none left: a graceful end.
        const bool idle = streams_.empty();
        if (idle && !goaway_ &&
            (draining_.load(std::memory_order_relaxed) || clock::now() - idle_since_ >= limits_.idle_timeout)) {
            goaway_ = true;
            nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
            continue;
        }
        write_wake_.expires_at(idle && !goaway_ ? idle_since_ + limits_.idle_timeout : clock::time_point::max());
        co_await write_wake_.async_wait(use_tuple);
    }
    // Over: the streams left fail, the reader is cut, the socket closed.
    fail(NGHTTP2_PROTOCOL_ERROR);
    error_code ignored;
    stream_.next_layer().cancel(ignored);
    stream_.next_layer().close(ignored);
}

}  // namespace vaultgate::net
