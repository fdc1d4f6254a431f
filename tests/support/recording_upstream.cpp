#include "recording_upstream.hpp"

#include "test_text.hpp"
#include "vaultgate/util/encoding.hpp"

#include <openssl/ssl.h>

#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace vaultgate::test {

std::vector<std::string> ReceivedRequest::header_values(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [n, v] : headers)
        if (strcasecmp(n.c_str(), name.c_str()) == 0) out.push_back(v);
    return out;
}

RecordingUpstream::RecordingUpstream(const std::string& cert_file, const std::string& key_file,
                                     const std::string& bind_ip)
    : plain_(cert_file.empty()) {
    if (!plain_) {
        tls_.use_certificate_chain_file(cert_file);
        tls_.use_private_key_file(key_file, ssl::context::pem);
    }
    tcp::endpoint ep(asio::ip::make_address(bind_ip), 0);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] {
        for (;;) {
            auto socket = std::make_shared<tcp::socket>(ioc_);
            boost::system::error_code ec;
            acceptor_.accept(*socket, ec);
            if (stopping_ || ec) return;
            ++connections_;
            socket->set_option(tcp::no_delay(true), ec);
            std::lock_guard lock(mutex_);
            sockets_.push_back(socket);
            workers_.emplace_back([this, socket] { serve(socket); });
        }
    });
}

RecordingUpstream::~RecordingUpstream() {
    stopping_ = true;
    release_sse();
    release_scripted();
    {
        // Wake the blocking accept with a connection of our own.
        boost::system::error_code ec;
        tcp::socket waker(ioc_);
        waker.connect(acceptor_.local_endpoint(), ec);
    }
    accept_thread_.join();
    std::vector<std::thread> workers;
    {
        std::lock_guard lock(mutex_);
        for (auto& s : sockets_) ::shutdown(s->native_handle(), SHUT_RDWR);
        workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
}

std::vector<ReceivedRequest> RecordingUpstream::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

std::string RecordingUpstream::raw() const {
    std::lock_guard lock(mutex_);
    return raw_;
}

void RecordingUpstream::release_sse() {
    std::lock_guard lock(mutex_);
    sse_released_ = true;
    sse_cv_.notify_all();
}

void RecordingUpstream::hold_scripted() {
    std::lock_guard lock(mutex_);
    scripted_held_ = true;
}

void RecordingUpstream::release_scripted() {
    std::lock_guard lock(mutex_);
    scripted_held_ = false;
    scripted_cv_.notify_all();
}

void RecordingUpstream::record_raw(const char* data, std::size_t n) {
    std::lock_guard lock(mutex_);
    raw_.append(data, n);
}

void RecordingUpstream::serve(std::shared_ptr<tcp::socket> socket) {
    if (plain_) {
        serve_stream(*socket);
    } else {
        ssl::stream<tcp::socket&> stream(*socket, tls_);
        boost::system::error_code ec;
        stream.handshake(ssl::stream_base::server, ec);
        if (!ec) {
            {
                std::lock_guard lock(mutex_);
                last_cipher_ = SSL_get_cipher_name(stream.native_handle());
            }
            ++handshakes_;
            serve_stream(stream);
        }
    }
    // Close like a real server does when it is done, so tunnels see the end.
    ::shutdown(socket->native_handle(), SHUT_RDWR);
    ++connections_ended_;
}

void RecordingUpstream::limit_to_tls12() { SSL_CTX_set_max_proto_version(tls_.native_handle(), TLS1_2_VERSION); }

void RecordingUpstream::script_response(std::string raw) {
    std::lock_guard lock(mutex_);
    scripted_ = std::move(raw);
}

std::string RecordingUpstream::last_cipher() const {
    std::lock_guard lock(mutex_);
    return last_cipher_;
}

template <class Stream>
void RecordingUpstream::serve_stream(Stream& stream) {
    boost::system::error_code ec;
    std::string buf;
    char tmp[16384];
    auto fill = [&]() -> bool {
        std::size_t n = stream.read_some(asio::buffer(tmp), ec);
        if (n > 0) {
            record_raw(tmp, n);
            buf.append(tmp, n);
        }
        return n > 0;
    };
    auto send = [&](const std::string& s) { asio::write(stream, asio::buffer(s), ec); };
    for (;;) {
        std::size_t end;
        while ((end = buf.find("\r\n\r\n")) == std::string::npos)
            if (!fill()) return;
        ReceivedRequest req;
        std::istringstream lines(buf.substr(0, end));
        std::string line;
        std::getline(lines, line);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        {
            std::istringstream rl(line);
            std::string version;
            rl >> req.method >> req.target >> version;
        }
        while (std::getline(lines, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            auto value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.erase(0, 1);
            req.headers.emplace_back(line.substr(0, colon), value);
        }
        buf.erase(0, end + 4);
        auto cl = req.header_values("content-length");
        auto te = req.header_values("transfer-encoding");
        if (!te.empty() && ascii_lower(te.front()) == "chunked") {
            for (;;) {
                std::size_t eol;
                while ((eol = buf.find("\r\n")) == std::string::npos)
                    if (!fill()) return;
                std::size_t size = std::strtoull(buf.substr(0, eol).c_str(), nullptr, 16);
                buf.erase(0, eol + 2);
                if (size == 0) {
                    while ((eol = buf.find("\r\n")) == std::string::npos)
                        if (!fill()) return;
                    buf.erase(0, eol + 2);
                    break;
                }
                while (buf.size() < size + 2)
                    if (!fill()) return;
                req.body.append(buf, 0, size);
                buf.erase(0, size + 2);
            }
        } else if (!cl.empty()) {
            std::size_t n = std::strtoull(cl.front().c_str(), nullptr, 10);
            while (buf.size() < n)
                if (!fill()) return;
            req.body = buf.substr(0, n);
            buf.erase(0, n);
        }
        {
            std::lock_guard lock(mutex_);
            requests_.push_back(req);
        }
        std::string path = req.target.substr(0, req.target.find('?'));
        if (path == "/big") {
            std::size_t n = 1 << 20;
            auto q = req.target.find("n=");
            if (q != std::string::npos) n = std::strtoull(req.target.c_str() + q + 2, nullptr, 10);
            send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n");
            std::string chunk(65536, 'x');
            while (n > 0 && !ec) {
                auto k = std::min(n, chunk.size());
                asio::write(stream, asio::buffer(chunk.data(), k), ec);
                n -= k;
            }
        } else if (path == "/upload") {
            auto body = std::to_string(req.body.size());
            send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
        } else if (path == "/redirect") {
            send("HTTP/1.1 302 Found\r\nLocation: https://elsewhere.test/landing\r\nContent-Length: 0\r\n\r\n");
        } else if (path == "/sse") {
            send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
            auto chunk = [](const std::string& data) {
                char size[16];
                std::snprintf(size, sizeof size, "%zx\r\n", data.size());
                return std::string(size) + data + "\r\n";
            };
            send(chunk("data: first\n\n"));
            {
                std::unique_lock lock(mutex_);
                sse_cv_.wait_for(lock, std::chrono::seconds(20), [this] { return sse_released_; });
            }
            send(chunk("data: second\n\n") + "0\r\n\r\n");
        } else if (path == "/ws") {
            send(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Accept: test\r\n\r\n");
            if (!buf.empty()) send(buf);
            while (!ec) {
                std::size_t n = stream.read_some(asio::buffer(tmp), ec);
                if (n > 0) asio::write(stream, asio::buffer(tmp, n), ec);
            }
            return;
        } else if (path == "/reflect") {
            auto keys = req.header_values("x-api-key");
            std::string k = keys.empty() ? std::string() : keys.front();
            // json: as PHP's json_encode writes it inside a string, '/' as "\/".
            std::string php_json;
            for (char ch : k) php_json += ch == '/' ? std::string("\\/") : std::string(1, ch);
            const std::string b64 = base64_encode(k, Base64Alphabet::standard, true);
            std::string body =
                "raw=" + k + " b64=" + b64 + " url=" + percent_encode(k) + " json=\"" + php_json + "\" end";
            std::size_t split = 1;
            auto q = req.target.find("split=");
            if (q != std::string::npos) split = std::strtoull(req.target.c_str() + q + 6, nullptr, 10);
            split = std::clamp<std::size_t>(split, 1, body.size());
            auto chunk = [](std::string_view data) {
                char size[16];
                std::snprintf(size, sizeof size, "%zx\r\n", data.size());
                return std::string(size) + std::string(data) + "\r\n";
            };
            std::string out = "HTTP/1.1 200 OK\r\nLocation: https://elsewhere.test/?k=" + percent_encode(k) +
                              "\r\nSet-Cookie: s=" + b64 + "; Path=/\r\nX-Raw: " + k +
                              "\r\nTransfer-Encoding: chunked\r\n\r\n";
            out += chunk(std::string_view(body).substr(0, split));
            if (split < body.size()) out += chunk(std::string_view(body).substr(split));
            out += "0\r\n\r\n";
            send(out);
        } else if (path == "/reset") {
            // A body that ends with the connection, cut by a TCP reset instead
            // of a close: the client must not be told it got all of it.
            send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial body");
            stream.lowest_layer().set_option(asio::socket_base::linger(true, 0), ec);
            stream.lowest_layer().close(ec);
            return;
        } else if (path == "/scripted") {
            std::string scripted;
            {
                std::unique_lock lock(mutex_);
                scripted_cv_.wait(lock, [this] { return !scripted_held_; });
                scripted = scripted_;
            }
            send(scripted);
        } else if (path == "/gzip") {
            send("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd");
        } else if (path == "/then-close") {
            send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            stream.lowest_layer().close(ec);
            return;
        } else if (path == "/close") {
            send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close body");
            if constexpr (!std::is_same_v<Stream, tcp::socket>) stream.shutdown(ec);
            return;
        } else {
            send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok");
        }
        if (ec) return;
    }
}

// ---------------------------------------------------------------- CanaryListener

CanaryListener::CanaryListener(const std::string& ip, std::uint16_t port) {
    tcp::endpoint ep(asio::ip::make_address(ip), port);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    acceptor_.non_blocking(true);
    thread_ = std::thread([this] {
        // Polls so the destructor can stop it without a wake-up connection, which
        // would count as an accepted SYN.
        while (!stop_) {
            pollfd p{acceptor_.native_handle(), POLLIN, 0};
            if (::poll(&p, 1, 50) > 0) {
                boost::system::error_code ec;
                tcp::socket s(ioc_);
                acceptor_.accept(s, ec);
                if (!ec) ++accepted_;
            }
        }
    });
}

CanaryListener::~CanaryListener() {
    stop_ = true;
    thread_.join();
    boost::system::error_code ec;
    acceptor_.close(ec);
}

}  // namespace vaultgate::test
