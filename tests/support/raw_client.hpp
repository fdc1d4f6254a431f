#pragma once
// A client that speaks to the proxy byte by byte: CONNECT, then TLS.
#include "asio_types.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace vaultgate::test {

// Raw client for malformed input: CONNECT, then TLS trusting the proxy CA.
class RawClient {
public:
    RawClient(std::uint16_t proxy_port);
    ~RawClient();
    // Sends raw bytes on the plain connection and reads the response head (up to CRLFCRLF).
    std::string send_plain(const std::string& bytes);
    // CONNECT authority; returns the status line + headers of the proxy's answer.
    std::string connect(const std::string& authority, const std::string& extra_headers = "");
    // TLS handshake over the tunnel, checking the certificate against ca_file for `host`.
    // The SNI names `host` too, unless `sni` is given.
    bool start_tls(const std::string& ca_file, const std::string& host, std::string* error = nullptr,
                   const std::string& sni = "");
    // The client's TLS settings (versions, suites), before start_tls.
    ssl::context& tls_context() { return tls_; }
    // The connection's OpenSSL object once start_tls succeeded, else null.
    SSL* tls_native() { return tls_stream_ ? tls_stream_->native_handle() : nullptr; }
    void write(const std::string& bytes);  // over TLS when started
    // Reads one HTTP response (head + body by Content-Length, chunked, or until close).
    struct Response {
        int status = 0;
        std::string head;
        std::string body;
        bool closed = false;  // the proxy closed the connection after it
    };
    std::optional<Response> read_response(int timeout_ms = 10000);
    // True once the peer has closed (reads EOF within timeout).
    bool closed_by_peer(int timeout_ms = 5000);
    std::string read_some(int timeout_ms = 5000);
    void close();
    void reset();  // closes with a TCP reset (SO_LINGER 0), as a crashed client would

private:
    std::size_t read_more(int timeout_ms);
    asio::io_context ioc_;
    ssl::context tls_{ssl::context::tls_client};
    tcp::socket socket_{ioc_};
    std::unique_ptr<ssl::stream<tcp::socket&>> tls_stream_;
    std::string buffer_;
    bool eof_ = false;
};

}  // namespace vaultgate::test
