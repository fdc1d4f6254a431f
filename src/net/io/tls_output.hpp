#pragma once
// The write side of a TlsSocket: OpenSSL writes each TLS record to a BIO, and
// with a socket BIO every record costs a write() of its own. This BIO queues
// the records instead, and TlsSocket sends the queue with one send() at the
// end of a handshake flight or of a write (for a long write, every three
// records: TlsSocket::send_batch_bytes), so a response head and body leave in
// one system call and one loopback packet.
#include "net/io/types.hpp"

#include <openssl/bio.h>

#include <string>

namespace vaultgate::net {

struct PendingOutput {
    int fd = -1;
    std::string bytes;     // ciphertext not yet on the socket
    std::size_t sent = 0;  // how much of `bytes` went out already

    bool empty() const { return sent == bytes.size(); }
    std::size_t queued() const { return bytes.size() - sent; }

    // Sends as much as the socket takes. True when nothing is left; false with
    // `ec` set otherwise (asio::error::would_block: wait until writable).
    bool flush(error_code& ec);
};

// A write-only BIO that appends to `out` and sends it on BIO_flush, which is
// how OpenSSL ends each handshake flight. `out` must outlive the BIO.
BIO* new_queueing_write_bio(PendingOutput* out);

}  // namespace vaultgate::net
