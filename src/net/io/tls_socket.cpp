#include "net/io/tls_socket.hpp"

#include <stdexcept>

namespace vaultgate::net {

TlsSocket::TlsSocket(tcp::socket socket, ssl::context& ctx)
    : socket_(std::move(socket)), ssl_(SSL_new(ctx.native_handle())) {
    if (!ssl_) throw std::runtime_error("SSL_new failed");
    // OpenSSL reads and writes the descriptor itself, so it must never block
    // (accepted sockets are already: make_client_context).
    if (!socket_.non_blocking()) socket_.non_blocking(true);
    const int fd = static_cast<int>(socket_.native_handle());
    out_->fd = fd;
    BIO* rbio = BIO_new_socket(fd, BIO_NOCLOSE);
    BIO* wbio = new_queueing_write_bio(out_.get());
    if (!rbio || !wbio) {
        BIO_free(rbio);
        BIO_free(wbio);
        throw std::runtime_error("cannot create the TLS socket's BIOs");
    }
    SSL_set_bio(ssl_.get(), rbio, wbio);  // the SSL owns both from here
    // A retried write may come from a buffer that moved (async_write keeps its
    // own position), and partial writes let async_write make progress.
    SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Read as much as the socket has into OpenSSL's buffer: one read() per
    // batch of records instead of two per record (header, then body). Code
    // that waits on the raw socket must then ask SSL_has_pending() first.
    SSL_set_read_ahead(ssl_.get(), 1);
}

std::size_t TlsSocket::try_io(bool reading, void* data, std::size_t size, error_code& ec) {
    ec = {};
    if (size == 0) return 0;
    clear_stale_errors();
    std::size_t n = 0;
    int rc = reading ? SSL_read_ex(ssl_.get(), data, size, &n) : SSL_write_ex(ssl_.get(), data, size, &n);
    if (rc == 1 && !reading) {
        // Accepted; the caller sends what is queued (try_flush) when it has
        // written all it has. A long write goes out every few records.
        if (out_->queued() < send_batch_bytes) return n;
        error_code flush_error;
        if (!out_->flush(flush_error) && flush_error != asio::error::would_block) {
            ec = flush_error;
            return 0;
        }
        return n;
    }
    if (rc == 1 && reading) {
        // SSL_read returns one record at most. The records read ahead with it
        // are taken too, so that a download moves in large pieces, each
        // written on with one call.
        std::size_t total = n;
        while (total < size && SSL_has_pending(ssl_.get())) {
            if (SSL_read_ex(ssl_.get(), static_cast<char*>(data) + total, size - total, &n) != 1) {
                // Whatever stopped it (most often a partial record) shows again on the next read.
                ERR_clear_error();
                break;
            }
            total += n;
        }
        flush_if_possible();
        return total;
    }
    switch (Next next = classify(rc, ec)) {
        case Next::wait_read:
        case Next::wait_write:
            last_want_ = next;
            ec = asio::error::would_block;
            break;
        default:
            break;
    }
    return 0;
}

TlsSocket::Next TlsSocket::classify(int rc, error_code& ec) {
    int err = SSL_get_error(ssl_.get(), rc);
    switch (err) {
        case SSL_ERROR_NONE:
            return Next::done;
        case SSL_ERROR_WANT_READ:
            return Next::wait_read;
        case SSL_ERROR_WANT_WRITE:
            return Next::wait_write;
        case SSL_ERROR_ZERO_RETURN:
            ec = asio::error::eof;
            return Next::failed;
        case SSL_ERROR_SYSCALL:
            // No TLS error queued: a socket error. A reset stays a reset: only a
            // clean close without close_notify (below) may end a body that is
            // delimited by the close.
            if (ERR_peek_error() == 0) {
                ec = errno != 0 ? error_code(errno, asio::error::get_system_category())
                                : error_code(ssl::error::stream_truncated);
                return Next::failed;
            }
            [[fallthrough]];
        default: {
            unsigned long code = ERR_get_error();
            if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
                ec = ssl::error::stream_truncated;
            else
                ec = error_code(static_cast<int>(code), asio::error::get_ssl_category());
            if (!ec) ec = ssl::error::stream_truncated;
            ERR_clear_error();
            return Next::failed;
        }
    }
}

}  // namespace vaultgate::net
