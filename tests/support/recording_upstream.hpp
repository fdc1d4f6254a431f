#pragma once
// Servers on 127.0.0.1 that record what reaches them: a TLS (or plain HTTP)
// origin that answers by path, and a listener that only counts connections.
#include "asio_types.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace vaultgate::test {

struct ReceivedRequest {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::vector<std::string> header_values(const std::string& name) const;  // case-insensitive
};

// A TLS server on 127.0.0.1:0 with a certificate for `host`. It parses what it
// receives (leniently: it is the thing under observation) and answers by path:
//   /echo          200, JSON-free text body "ok"
//   /big?n=N       200 with N bytes of 'x'
//   /upload        200 with the received body length
//   /redirect      302 Location: https://elsewhere.test/landing
//   /sse           chunked text/event-stream: one event, then waits for release_sse(), then one more
//   /ws            101 Switching Protocols, then echoes every byte back
//   /close         200 with no framing, body then close
//   /then-close    200 with Content-Length and no "Connection: close", then the
//                  connection is closed anyway (as an origin's idle timeout does)
//   /reflect?split=N  echoes the x-api-key value back raw, base64 and URL-encoded
//                  in a chunked body cut at byte N, and in Location and Set-Cookie
//   /gzip          200 with Content-Encoding: gzip
//   /scripted      the bytes last given to script_response(), as they are; while
//                  held (hold_scripted), only once released or the server goes
// Everything received is recorded raw as well. With an empty cert_file it
// speaks plain HTTP instead of TLS.
class RecordingUpstream {
public:
    RecordingUpstream(const std::string& cert_file, const std::string& key_file,
                      const std::string& bind_ip = "127.0.0.1");
    ~RecordingUpstream();

    std::uint16_t port() const { return port_; }
    std::vector<ReceivedRequest> requests() const;
    std::string raw() const;  // every byte of every connection, decrypted
    std::size_t connections() const { return connections_; }
    std::size_t tls_handshakes() const { return handshakes_; }
    // Connections whose serving ended: the peer closed, or a read failed.
    std::size_t connections_ended() const { return connections_ended_; }
    void release_sse();
    // What /scripted answers, byte for byte (1xx heads, odd framing, ...).
    void script_response(std::string raw);
    // /scripted reads its request, then waits to answer until release_scripted()
    // (a slow token endpoint) or the server goes (one that never answers).
    void hold_scripted();
    void release_scripted();
    // Handshakes offer TLS 1.2 at most (and, as by default, take the client's
    // first suite they support, as nginx does). Call before the first connection.
    void limit_to_tls12();
    // The suite of the last completed handshake ("" before any).
    std::string last_cipher() const;

private:
    void serve(std::shared_ptr<tcp::socket> socket);
    template <class Stream>
    void serve_stream(Stream& stream);
    bool plain_ = false;
    void record_raw(const char* data, std::size_t n);

    asio::io_context ioc_;
    ssl::context tls_{ssl::context::tls_server};
    tcp::acceptor acceptor_{ioc_};
    std::uint16_t port_ = 0;
    std::thread accept_thread_;
    std::vector<std::thread> workers_;
    mutable std::mutex mutex_;
    std::condition_variable sse_cv_;
    bool sse_released_ = false;
    std::string scripted_;
    bool scripted_held_ = false;
    std::condition_variable scripted_cv_;
    std::vector<ReceivedRequest> requests_;
    std::string raw_;
    std::atomic<std::size_t> connections_{0};
    std::atomic<std::size_t> handshakes_{0};
    std::string last_cipher_;
    std::atomic<std::size_t> connections_ended_{0};
    std::atomic<bool> stopping_{false};
    std::vector<std::shared_ptr<tcp::socket>> sockets_;
};

// A plain TCP listener that only counts connection attempts: proof that no SYN
// reached a refused target.
class CanaryListener {
public:
    explicit CanaryListener(const std::string& ip = "127.0.0.1", std::uint16_t port = 0);
    ~CanaryListener();
    std::uint16_t port() const { return port_; }
    std::size_t accepted() const { return accepted_; }

private:
    asio::io_context ioc_;
    tcp::acceptor acceptor_{ioc_};
    std::uint16_t port_ = 0;
    std::atomic<std::size_t> accepted_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace vaultgate::test
