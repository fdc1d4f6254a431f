#include "raw_client.hpp"

#include "test_text.hpp"

#include <openssl/ssl.h>

#include <poll.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace vaultgate::test {

RawClient::RawClient(std::uint16_t proxy_port) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), proxy_port));
    socket_.set_option(tcp::no_delay(true));
}

RawClient::~RawClient() {
    boost::system::error_code ec;
    socket_.close(ec);
}

std::size_t RawClient::read_more(int timeout_ms) {
    if (eof_) return 0;
    // Reads run with the socket non-blocking: the TLS layer may already hold a
    // record it read earlier, which poll() on the descriptor cannot see.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char tmp[65536];
    socket_.non_blocking(true);
    std::size_t n = 0;
    for (;;) {
        boost::system::error_code ec;
        n = tls_stream_ ? tls_stream_->read_some(asio::buffer(tmp), ec) : socket_.read_some(asio::buffer(tmp), ec);
        if (n > 0) {
            buffer_.append(tmp, n);
            break;
        }
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            pollfd p{socket_.native_handle(), POLLIN, 0};
            ::poll(&p, 1, static_cast<int>(left.count()));
            continue;
        }
        if (ec) eof_ = true;
        break;
    }
    socket_.non_blocking(false);
    return n;
}

std::string RawClient::send_plain(const std::string& bytes) {
    asio::write(socket_, asio::buffer(bytes));
    auto resp = read_response();
    return resp ? resp->head + resp->body : std::string();
}

std::string RawClient::connect(const std::string& authority, const std::string& extra_headers) {
    asio::write(socket_, asio::buffer("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n" +
                                      extra_headers + "\r\n"));
    std::size_t end;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
        if (std::chrono::steady_clock::now() > deadline || (read_more(1000) == 0 && eof_)) return buffer_;
    }
    std::string head = buffer_.substr(0, end + 4);
    buffer_.erase(0, end + 4);
    // A refusal carries a body; keep it with the head for the caller.
    if (head.rfind("HTTP/1.1 200", 0) != 0) {
        while (read_more(500) > 0) {}
        head += buffer_;
        buffer_.clear();
    }
    return head;
}

bool RawClient::start_tls(const std::string& ca_file, const std::string& host, std::string* error,
                          const std::string& sni) {
    tls_.load_verify_file(ca_file);
    tls_.set_verify_mode(ssl::verify_peer);
    tls_stream_ = std::make_unique<ssl::stream<tcp::socket&>>(socket_, tls_);
    SSL_set_tlsext_host_name(tls_stream_->native_handle(), (sni.empty() ? host : sni).c_str());
    SSL_set1_host(tls_stream_->native_handle(), host.c_str());
    boost::system::error_code ec;
    tls_stream_->handshake(ssl::stream_base::client, ec);
    if (ec && error) *error = ec.message();
    return !ec;
}

void RawClient::write(const std::string& bytes) {
    boost::system::error_code ec;
    if (tls_stream_)
        asio::write(*tls_stream_, asio::buffer(bytes), ec);
    else
        asio::write(socket_, asio::buffer(bytes), ec);
}

std::string RawClient::read_some(int timeout_ms) {
    if (buffer_.empty()) read_more(timeout_ms);
    std::string out;
    out.swap(buffer_);
    return out;
}

void RawClient::close() {
    boost::system::error_code ec;
    socket_.close(ec);
    eof_ = true;
}

void RawClient::reset() {
    boost::system::error_code ec;
    socket_.set_option(asio::socket_base::linger(true, 0), ec);
    close();
}

bool RawClient::closed_by_peer(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!eof_ && std::chrono::steady_clock::now() < deadline) read_more(100);
    return eof_;
}

std::optional<RawClient::Response> RawClient::read_response(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    auto remaining = [&] {
        return static_cast<int>(std::max<long>(
            1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                   .count()));
    };
    auto expired = [&] { return std::chrono::steady_clock::now() >= deadline; };
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
        if (eof_ || expired()) {
            if (std::getenv("VAULTGATE_TEST_DEBUG"))
                std::fprintf(stderr, "read_response: no head; eof=%d buffered=%zu\n", eof_, buffer_.size());
            return std::nullopt;
        }
        read_more(remaining());
    }
    Response r;
    r.head = buffer_.substr(0, end + 4);
    buffer_.erase(0, end + 4);
    r.status = std::atoi(r.head.c_str() + 9);
    std::string lhead = ascii_lower(r.head);
    auto header = [&](const std::string& name) -> std::optional<std::string> {
        auto pos = lhead.find("\r\n" + name + ":");
        if (pos == std::string::npos) return std::nullopt;
        auto start = pos + 3 + name.size();
        auto stop = lhead.find("\r\n", start);
        auto v = r.head.substr(start, stop - start);
        while (!v.empty() && v.front() == ' ') v.erase(0, 1);
        return v;
    };
    if (r.status == 101 || r.status == 204 || r.status == 304 || (r.status >= 100 && r.status < 200)) return r;
    if (auto te = header("transfer-encoding"); te && ascii_lower(*te) == "chunked") {
        for (;;) {
            std::size_t eol;
            while ((eol = buffer_.find("\r\n")) == std::string::npos) {
                if (eof_ || expired()) return std::nullopt;
                read_more(remaining());
            }
            std::size_t size = std::strtoull(buffer_.substr(0, eol).c_str(), nullptr, 16);
            buffer_.erase(0, eol + 2);
            if (size == 0) {
                while ((eol = buffer_.find("\r\n")) == std::string::npos) {
                    if (eof_ || expired()) return std::nullopt;
                    read_more(remaining());
                }
                buffer_.erase(0, eol + 2);
                break;
            }
            while (buffer_.size() < size + 2) {
                if (eof_ || expired()) return std::nullopt;
                read_more(remaining());
            }
            r.body.append(buffer_, 0, size);
            buffer_.erase(0, size + 2);
        }
    } else if (auto cl = header("content-length")) {
        std::size_t n = std::strtoull(cl->c_str(), nullptr, 10);
        while (buffer_.size() < n) {
            if (eof_ || expired()) return std::nullopt;
            read_more(remaining());
        }
        r.body = buffer_.substr(0, n);
        buffer_.erase(0, n);
    } else {
        while (!eof_ && !expired()) read_more(remaining());
        r.body.swap(buffer_);
    }
    if (auto c = header("connection"); c && ascii_lower(*c) == "close") r.closed = true;
    return r;
}

}  // namespace vaultgate::test
