#pragma once
// TLS over a non-blocking TCP socket. OpenSSL reads the descriptor itself
// (with read-ahead, one read() per batch of records) and writes its records
// into a queue that goes out with one send() per write, or per three records
// of a long one (tls_output.hpp).
// Asio's ssl::stream puts a BIO pair and two record-sized buffers in between
// (memory per stream, and a copy each way: docs/benchmarks.md); here an idle
// connection holds only OpenSSL's state: its owner calls release_buffers()
// before it waits for a peer that is quiet. (SSL_MODE_RELEASE_BUFFERS would do
// that after every record, at the price of an allocation and a free per record
// on busy connections.)
//
// The operations follow Asio's stream concepts (async_read_some /
// async_write_some with any completion token), so asio::async_write and the
// coroutine code work on it unchanged; try_read_some / try_write_some do the
// same without waiting, for the common case where no wait is needed (but
// leave a short write's records queued for try_flush). Reads and
// writes may be outstanding at the same time (a splice does that); each waits
// on the socket for what OpenSSL asks for (readable or writable), so a
// cancellation of the socket (the watchdog) ends them.
#include "net/io/tls_output.hpp"
#include "net/io/types.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <memory>

namespace vaultgate::net {

class TlsSocket {
public:
    using executor_type = tcp::socket::executor_type;
    enum class Side { client, server };

    TlsSocket(tcp::socket socket, ssl::context& ctx);
    TlsSocket(TlsSocket&&) noexcept = default;
    TlsSocket& operator=(TlsSocket&&) noexcept = default;

    executor_type get_executor() { return socket_.get_executor(); }
    tcp::socket& next_layer() { return socket_; }
    SSL* native_handle() { return ssl_.get(); }

    // One read or write attempted now, without waiting: returns the bytes
    // moved, or 0 with `ec` set (asio::error::would_block when the socket must
    // be waited on first). Most reads and writes of a busy connection complete
    // at once; trying first spares them an asynchronous operation's allocation,
    // post and resumption.
    //
    // A write's records stay queued until send_batch_bytes are (then as much
    // as the socket takes is sent); the caller sends the rest with try_flush
    // or async_flush once it has written everything it has.
    std::size_t try_read_some(void* data, std::size_t size, error_code& ec) { return try_io(true, data, size, ec); }
    std::size_t try_write_some(const void* data, std::size_t size, error_code& ec) {
        return try_io(false, const_cast<void*>(data), size, ec);
    }

    // Up to three full records (16 KiB of plaintext each) per send(): fewer
    // sends per download, and still within one 64 KiB loopback segment
    // (docs/benchmarks.md, "Numbers behind the code").
    static constexpr std::size_t send_batch_bytes = 40 * 1024;

    // Frees OpenSSL's record buffers unless they hold data; they come back on
    // the next read or write. For connections about to idle.
    void release_buffers() {
        SSL_free_buffers(ssl_.get());
        if (out_->empty()) std::string().swap(out_->bytes);
    }

    // Sends the queued records if the socket takes them all now (true at once
    // when none are queued); would_block if it does not (the rest stays queued).
    bool try_flush(error_code& ec) { return out_->flush(ec); }

    // Completes once every queued record is on the socket. For just after
    // try_flush said would_block: waits until the socket is writable first
    // rather than trying it again at once.
    template <class Token>
    auto async_flush(Token&& token) {
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            IoOp<false>{this, nullptr, 0, false, Next::wait_write}, token, socket_);
    }

    template <class Token>
    auto async_handshake(ssl::stream_base::handshake_type type, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(HandshakeOp{this, type == ssl::stream_base::server}, token,
                                                            socket_);
    }

    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        asio::mutable_buffer first = *asio::buffer_sequence_begin(buffers);
        return asio::async_compose<Token, void(error_code, std::size_t)>(IoOp<true>{this, first.data(), first.size()},
                                                                         token, socket_);
    }

    // As async_read_some, for just after try_read_some said would_block: waits
    // on the socket first rather than asking OpenSSL again, which would try
    // the socket once more for nothing.
    template <class MutableBuffers, class Token>
    auto async_read_some_after_would_block(const MutableBuffers& buffers, Token&& token) {
        asio::mutable_buffer first = *asio::buffer_sequence_begin(buffers);
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            IoOp<true>{this, first.data(), first.size(), false, last_want_}, token, socket_);
    }

    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        asio::const_buffer first = *asio::buffer_sequence_begin(buffers);
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            IoOp<false>{this, const_cast<void*>(first.data()), first.size()}, token, socket_);
    }

private:
    struct SslDeleter {
        void operator()(SSL* s) const noexcept { SSL_free(s); }
    };

    // SSL_get_error needs an empty error queue before the call it explains.
    // Peeking first is cheaper than clearing an already empty queue, which is
    // the usual case (classify() empties it after every failure).
    static void clear_stale_errors() {
        if (ERR_peek_error() != 0) ERR_clear_error();
    }

    std::size_t try_io(bool reading, void* data, std::size_t size, error_code& ec);

    // What an OpenSSL call asked for next.
    enum class Next { done, wait_read, wait_write, failed };
    Next classify(int rc, error_code& ec);

    // The first step of an operation runs inside the initiating call; if it
    // completes there, the completion is posted, as Asio requires.
    struct HandshakeOp {
        TlsSocket* self;
        bool server;
        bool started = false;
        template <class Op>
        void operator()(Op& op, error_code ec = {}) {
            bool first = !started;
            started = true;
            if (ec) return op.complete(ec);
            clear_stale_errors();
            int rc = server ? SSL_accept(self->ssl_.get()) : SSL_connect(self->ssl_.get());
            Next next = self->classify(rc, ec);
            // The last flight may still be queued; the handshake is over once it is sent.
            if (next == Next::done && !self->out_->flush(ec)) {
                if (ec == asio::error::would_block) next = Next::wait_write;
                ec = ec == asio::error::would_block ? error_code{} : ec;
            }
            if (next == Next::wait_read || next == Next::wait_write) return self->wait_for(next, op);
            if (first) return asio::post(self->socket_.get_executor(), asio::append(std::move(op), ec, true));
            op.complete(ec);
        }
        template <class Op>
        void operator()(Op& op, error_code ec, bool /*posted*/) {
            op.complete(ec);
        }
    };

    // Reads or writes once; a write (or a flush, when size is 0) completes only
    // when its records are on the socket.
    template <bool Reading>
    struct IoOp {
        TlsSocket* self;
        void* data;
        std::size_t size;
        bool started = false;
        Next wait_first = Next::done;  // what to wait for before the first attempt, if anything
        bool flushing = false;         // written; waiting for the socket to take the records
        std::size_t written = 0;
        template <class Op>
        void operator()(Op& op, error_code ec = {}) {
            bool first = !started;
            started = true;
            if (first && wait_first != Next::done) return self->wait_for(wait_first, op);
            if (ec) return op.complete(ec, 0);
            if constexpr (!Reading) {
                if (flushing || size == 0) return flush(op, first);
            }
            clear_stale_errors();
            std::size_t n = 0;
            int rc = Reading ? SSL_read_ex(self->ssl_.get(), data, size, &n)
                             : SSL_write_ex(self->ssl_.get(), data, size, &n);
            if (rc == 1) {
                if constexpr (Reading) {
                    self->flush_if_possible();  // e.g. a KeyUpdate answer the read produced
                    return finish(op, first, {}, n);
                } else {
                    flushing = true;
                    written = n;
                    return flush(op, first);
                }
            }
            const Next next = self->classify(rc, ec);
            if (next == Next::wait_read || next == Next::wait_write) return self->wait_for(next, op);
            finish(op, first, ec, 0);
        }
        template <class Op>
        void operator()(Op& op, error_code ec, std::size_t n, bool /*posted*/) {
            op.complete(ec, n);
        }
        template <class Op>
        void flush(Op& op, bool first) {
            error_code ec;
            if (self->out_->flush(ec)) return finish(op, first, {}, written);
            if (ec == asio::error::would_block) {
                flushing = true;
                return self->wait_for(Next::wait_write, op);
            }
            return finish(op, first, ec, 0);
        }
        template <class Op>
        void finish(Op& op, bool first, error_code ec, std::size_t n) {
            if (first) return asio::post(self->socket_.get_executor(), asio::append(std::move(op), ec, n, true));
            op.complete(ec, n);
        }
    };

    // Resumes `op` once the socket is ready for what OpenSSL asked for
    // (Next::wait_read or Next::wait_write).
    template <class Op>
    void wait_for(Next next, Op& op) {
        socket_.async_wait(next == Next::wait_read ? tcp::socket::wait_read : tcp::socket::wait_write, std::move(op));
    }

    // Sends queued records if the socket takes them now; what it does not take
    // goes with the next write or flush.
    void flush_if_possible() {
        error_code ignored;
        if (!out_->empty()) out_->flush(ignored);
    }

    tcp::socket socket_;
    std::unique_ptr<SSL, SslDeleter> ssl_;
    // On the heap: the write BIO points at it, and a TlsSocket moves.
    std::unique_ptr<PendingOutput> out_ = std::make_unique<PendingOutput>();
    Next last_want_ = Next::wait_read;  // what the last would_block of try_io waits for
};

}  // namespace vaultgate::net
