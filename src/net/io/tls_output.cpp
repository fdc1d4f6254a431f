#include "net/io/tls_output.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <mutex>
#include <stdexcept>

namespace vaultgate::net {

bool PendingOutput::flush(error_code& ec) {
    ec = {};
    while (!empty()) {
        ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ec = (errno == EAGAIN || errno == EWOULDBLOCK) ? error_code(asio::error::would_block)
                                                           : error_code(errno, asio::error::get_system_category());
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    bytes.clear();
    sent = 0;
    return true;
}

namespace {

PendingOutput* output_of(BIO* bio) { return static_cast<PendingOutput*>(BIO_get_data(bio)); }

int queue_write(BIO* bio, const char* data, std::size_t len, std::size_t* written) {
    BIO_clear_retry_flags(bio);
    output_of(bio)->bytes.append(data, len);
    *written = len;
    return 1;
}

long queue_ctrl(BIO* bio, int cmd, long, void*) {
    switch (cmd) {
        case BIO_CTRL_FLUSH: {
            BIO_clear_retry_flags(bio);
            error_code ec;
            if (output_of(bio)->flush(ec)) return 1;
            if (ec == asio::error::would_block) {
                BIO_set_retry_write(bio);
            } else {
                // OpenSSL reports a failed flush as a system error; errno says which.
                errno = ec.value();
            }
            return 0;
        }
        case BIO_CTRL_WPENDING: {
            auto* out = output_of(bio);
            return static_cast<long>(out->bytes.size() - out->sent);
        }
        case BIO_CTRL_PENDING:
            return 0;
        default:
            return 0;  // no ktls, no push/pop, nothing else
    }
}

int queue_create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
}

BIO_METHOD* queueing_method() {
    // Created once, shared by every connection, never freed (like OpenSSL's own).
    static BIO_METHOD* method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "vaultgate queued output");
        if (!m || !BIO_meth_set_write_ex(m, queue_write) || !BIO_meth_set_ctrl(m, queue_ctrl) ||
            !BIO_meth_set_create(m, queue_create))
            throw std::runtime_error("cannot create the TLS output BIO method");
        return m;
    }();
    return method;
}

}  // namespace

BIO* new_queueing_write_bio(PendingOutput* out) {
    BIO* bio = BIO_new(queueing_method());
    if (bio) BIO_set_data(bio, out);
    return bio;
}

}  // namespace vaultgate::net
