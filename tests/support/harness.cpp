#include "harness.hpp"

#include <gtest/gtest.h>

#include "vaultgate/observe/diag_log.hpp"

#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace vaultgate::test {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- TestPki

TestPki::TestPki(const TempDir& dir) {
    fs::create_directories(dir.file("proxy-ca"));
    create_ca_files(dir.file("proxy-ca"), "vaultgate test proxy CA");
    proxy_ca_cert = dir.file("proxy-ca/ca.pem");
    proxy_ca_key = dir.file("proxy-ca/ca-key.pem");
    create_ca_files(dir.file("upstream-ca"), "test upstream CA");
    upstream_ca_cert = dir.file("upstream-ca/ca.pem");
    upstream_ca = CertificateAuthority::load(upstream_ca_cert, dir.file("upstream-ca/ca-key.pem"));
    create_ca_files(dir.file("rogue-ca"), "rogue CA");
    rogue_ca = CertificateAuthority::load(dir.file("rogue-ca/ca.pem"), dir.file("rogue-ca/ca-key.pem"));
}

std::pair<std::string, std::string> TestPki::server_files(const TempDir& dir, const std::string& host, bool rogue) const {
    auto leaf = (rogue ? rogue_ca : upstream_ca)->mint(host);
    auto cert_path = dir.file((rogue ? "rogue-" : "srv-") + host + ".pem");
    auto key_path = dir.file((rogue ? "rogue-" : "srv-") + host + "-key.pem");
    FILE* f = std::fopen(cert_path.c_str(), "w");
    PEM_write_X509(f, leaf->cert.get());
    std::fclose(f);
    f = std::fopen(key_path.c_str(), "w");
    PEM_write_PrivateKey(f, leaf->key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    return {cert_path, key_path};
}

// ---------------------------------------------------------------- RecordingUpstream

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

void RecordingUpstream::record_raw(const char* data, std::size_t n) {
    std::lock_guard lock(mutex_);
    raw_.append(data, n);
}

namespace {

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

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

void RecordingUpstream::limit_to_tls12() {
    SSL_CTX_set_max_proto_version(tls_.native_handle(), TLS1_2_VERSION);
}

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
        if (!te.empty() && lower(te.front()) == "chunked") {
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
            send("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
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
            std::string body = "raw=" + k + " b64=" + b64 + " url=" + percent_encode(k) + " json=\"" + php_json + "\" end";
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
                std::lock_guard lock(mutex_);
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

// ---------------------------------------------------------------- ProxyUnderTest

ProxyUnderTest::ProxyUnderTest(const std::string& yaml, unsigned threads) {
    if (std::getenv("VAULTGATE_TEST_DEBUG")) set_log_level(LogLevel::debug);
    config_ = parse_config(yaml, "test.yaml");
    std::vector<std::string> warnings;
    auto state = build_state(config_, warnings);
    ServerOptions options;
    options.threads = threads;
    server_ = make_server(config_, state, options);
    server_->start();
}

ProxyUnderTest::~ProxyUnderTest() {
    server_->stop(std::chrono::milliseconds(0));
    server_->wait();
}

bool ProxyUnderTest::wait_for_log(const std::string& needle, int timeout_ms) const {
    // Log lines are written when a connection ends, which may be just after the
    // client saw its answer; poll the file until the line is there or time runs out.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (access_log_text().find(needle) != std::string::npos) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string stop_and_read_access_log(std::unique_ptr<ProxyUnderTest>& proxy) {
    if (!proxy) return {};
    const std::string path = proxy->config().log_access;
    proxy.reset();
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string ProxyUnderTest::access_log_text() const {
    std::ifstream in(config_.log_access);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// ---------------------------------------------------------------- RawClient

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
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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
        while (read_more(500) > 0) {
        }
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
    if (tls_stream_) asio::write(*tls_stream_, asio::buffer(bytes), ec);
    else asio::write(socket_, asio::buffer(bytes), ec);
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
            1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count()));
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
    std::string lhead = lower(r.head);
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
    if (auto te = header("transfer-encoding"); te && lower(*te) == "chunked") {
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
    if (auto c = header("connection"); c && lower(*c) == "close") r.closed = true;
    return r;
}

// ---------------------------------------------------------------- ServeProcess

ServeProcess::ServeProcess(const std::string& config_path, const std::map<std::string, std::string>& env,
                           int max_files, const std::vector<std::string>& wrapper) {
    for (const auto& [name, value] : env)
        if (value.size() >= 8) forbidden_in_stderr_.push_back(value);
    int err_pipe[2];
    if (pipe(err_pipe)) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
        dup2(err_pipe[1], 2);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        close(err_pipe[0]);
        close(err_pipe[1]);
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        if (max_files > 0) {
            rlimit lim{static_cast<rlim_t>(max_files), static_cast<rlim_t>(max_files)};
            setrlimit(RLIMIT_NOFILE, &lim);
        }
        if (!wrapper.empty()) {
            std::vector<std::string> all = wrapper;
            all.push_back(VAULTGATE_BINARY);
            all.push_back(config_path);
            std::vector<char*> args;
            for (auto& a : all) args.push_back(a.data());
            args.push_back(nullptr);
            execvp(args[0], args.data());
            _exit(127);
        }
        execl(VAULTGATE_BINARY, VAULTGATE_BINARY, "serve", "--config", config_path.c_str(), nullptr);
        _exit(127);
    }
    close(err_pipe[1]);
    err_fd_ = err_pipe[0];
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        read_stderr(200);
        auto pos = err_.find("vaultgate listening: proxy ");
        if (pos != std::string::npos && err_.find('\n', pos) != std::string::npos) {
            auto line = err_.substr(pos, err_.find('\n', pos) - pos);
            auto port_after = [&](const std::string& key) -> std::uint16_t {
                auto k = line.find(key);
                if (k == std::string::npos) return 0;
                auto colon = line.find_first_of(' ', k + key.size());
                auto token = line.substr(k + key.size(), colon - k - key.size());
                auto c = token.rfind(':');
                return c == std::string::npos ? 0 : static_cast<std::uint16_t>(std::atoi(token.c_str() + c + 1));
            };
            proxy_port_ = port_after("proxy ");
            admin_port_ = port_after("admin ");
            return;
        }
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            pid_ = -1;
            read_stderr(100);
            return;
        }
    }
}

ServeProcess::~ServeProcess() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    // Whatever the test did, no credential reached the diagnostic log: the
    // harness's secret, and each value the test handed the process.
    read_stderr(0);
    EXPECT_EQ(err_.find(test_secret), std::string::npos) << "the secret reached stderr";
    for (const auto& value : forbidden_in_stderr_)
        EXPECT_EQ(err_.find(value), std::string::npos) << "a value the test handed the proxy reached stderr";
    // The binary's I/O threads reuse OpenSSL's buffers (block_cache.hpp).
    EXPECT_EQ(err_.find("OpenSSL allocations are not routed"), std::string::npos) << err_;
    if (err_fd_ >= 0) close(err_fd_);
}

void ServeProcess::read_stderr(int timeout_ms) {
    if (err_fd_ < 0) return;
    pollfd p{err_fd_, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
        char buf[4096];
        auto n = ::read(err_fd_, buf, sizeof buf);
        if (n <= 0) {
            close(err_fd_);
            err_fd_ = -1;
            return;
        }
        err_.append(buf, static_cast<std::size_t>(n));
        timeout_ms = 0;
    }
}

long ServeProcess::rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

double ServeProcess::cpu_seconds() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close_paren + 2));
    std::string field;
    // Fields after the command: state(3) ... utime(14) stime(15).
    std::vector<std::string> fields;
    while (rest >> field) fields.push_back(field);
    if (fields.size() < 13) return -1;
    return (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void ServeProcess::signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
}

int ServeProcess::wait_exit(int timeout_s) {
    if (pid_ <= 0) return exit_code_;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            pid_ = -1;
            read_stderr(100);
            return exit_code_;
        }
        read_stderr(50);
    }
    return -1;
}

std::string ServeProcess::stderr_text() {
    read_stderr(0);
    return err_;
}

HttpResult admin_request(std::uint16_t port, const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body) {
    asio::io_context ioc;
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
    if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
    if (!body.empty() || method == "POST" || method == "PUT")
        req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    asio::write(s, asio::buffer(req));
    std::string resp;
    boost::system::error_code ec;
    char buf[8192];
    for (;;) {
        auto n = s.read_some(asio::buffer(buf), ec);
        resp.append(buf, n);
        if (ec) break;
    }
    HttpResult r;
    auto end = resp.find("\r\n\r\n");
    if (end == std::string::npos) return r;
    r.head = resp.substr(0, end + 4);
    r.body = resp.substr(end + 4);
    r.status = std::atoi(r.head.c_str() + 9);
    return r;
}

// ---------------------------------------------------------------- run_command

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          const std::map<std::string, std::string>& env, int timeout_s) {
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (pipe(in_pipe) || pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    signal(SIGPIPE, SIG_IGN);
    if (!input.empty()) [[maybe_unused]] auto w = ::write(in_pipe[1], input.data(), input.size());
    close(in_pipe[1]);
    CommandResult r;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
        if (::poll(fds, 2, 200) <= 0) continue;
        for (auto& f : fds) {
            if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
            char buf[4096];
            auto n = ::read(f.fd, buf, sizeof buf);
            if (n <= 0) {
                close(f.fd);
                f.fd = -1;
                --open_fds;
            } else {
                (&f == &fds[0] ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    if (open_fds > 0) kill(pid, SIGKILL);
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::uint16_t free_port(const std::string& ip) {
    asio::io_context ioc;
    tcp::acceptor a(ioc, tcp::endpoint(asio::ip::make_address(ip), 0));
    return a.local_endpoint().port();
}

std::string serve_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                         const std::string& limits, const std::string& allowed_extra) {
    dir.write("admin.token", std::string(serve_admin_token) + "\n");
    std::string key(32, '\0');
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i * 7 + 1);
    dir.write("master.key", key);
    auto secret_file = dir.write("secret.txt", std::string(test_secret) + "\n");
    std::ostringstream y;
    y << "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
      << "ca:\n  cert: " << pki.proxy_ca_cert << "\n  key: " << pki.proxy_ca_key << "\n"
      << "upstream:\n  ca_file: " << pki.upstream_ca_cert
      << "\n  resolve:\n    api.bound.test: 127.0.0.1\n    other.test: 127.0.0.1\n    new.test: 127.0.0.1\n"
      << "store:\n  path: " << dir.file("vaultgate.db") << "\n  master_key_file: " << dir.file("master.key") << "\n"
      << "admin:\n  token_file: " << dir.file("admin.token") << "\n"
      << "log:\n  access: " << dir.file("access.log") << "\n  level: info\n"
      << "limits:\n" << (limits.empty() ? "  idle_timeout: 30s\n" : limits)
      << "vaults:\n  - name: bench\n    credentials:\n      BENCH_KEY: { file: " << secret_file << " }\n"
      << "    services:\n      - host: api.bound.test\n        port: " << bound_port
      << "\n        auth: { type: api-key, key: BENCH_KEY }\n"
      << "sessions:\n  default: { vaults: [bench], egress_policy: test }\n"
      << "egress_policies:\n  test:\n    allowed_domains: [\"other.test:" << other_port << "\"" << allowed_extra << "]\n";
    return y.str();
}

// ---------------------------------------------------------------- base_config

bool eventually(const std::function<bool()>& condition, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (condition()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

std::vector<std::unique_ptr<RawClient>> hold_sse_exchanges(RecordingUpstream& origin, std::size_t count,
                                                           const std::function<std::unique_ptr<RawClient>()>& open,
                                                           const std::string& request) {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (std::size_t i = 0; i < count; ++i) {
        clients.push_back(open());
        clients.back()->write(request);
    }
    EXPECT_TRUE(eventually([&] { return origin.requests().size() == count; }));
    EXPECT_EQ(origin.connections(), count);
    return clients;
}

void finish_sse_exchanges(RecordingUpstream& origin, std::vector<std::unique_ptr<RawClient>>& clients) {
    origin.release_sse();
    for (auto& c : clients) {
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
}

std::string base_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                        const std::string& extra_service_yaml, const std::string& extra_policy_yaml) {
    auto secret_file = dir.write("secret.txt", std::string(test_secret) + "\n");
    std::ostringstream y;
    y << "listen:\n"
      << "  proxy: 127.0.0.1:0\n"
      << "  admin: 127.0.0.1:0\n"
      << "ca:\n"
      << "  cert: " << pki.proxy_ca_cert << "\n"
      << "  key: " << pki.proxy_ca_key << "\n"
      << "upstream:\n"
      << "  ca_file: " << pki.upstream_ca_cert << "\n"
      << "  resolve:\n"
      << "    api.bound.test: 127.0.0.1\n"
      << "    other.test: 127.0.0.1\n"
      << "    wrong.test: 127.0.0.1\n"
      << "    rogue.test: 127.0.0.1\n"
      << "store:\n"
      << "  path: " << dir.file("vaultgate.db") << "\n"
      << "log:\n"
      << "  access: " << dir.file("access.log") << "\n"
      << "  level: warn\n"
      << "limits:\n"
      << "  handshake_timeout: 3s\n"
      << "  header_timeout: 3s\n"
      << "  idle_timeout: 10s\n"
      << "vaults:\n"
      << "  - name: bench\n"
      << "    credentials:\n"
      << "      BENCH_KEY: { file: " << secret_file << " }\n"
      << "    services:\n"
      << "      - host: api.bound.test\n"
      << "        port: " << bound_port << "\n"
      << "        auth: { type: api-key, header: x-api-key, key: BENCH_KEY }\n"
      << extra_service_yaml
      << "sessions:\n"
      << "  default: { vaults: [bench], egress_policy: test }\n"
      << "egress_policies:\n"
      << "  test:\n"
      << "    allow_https: true\n"
      << "    allowed_domains: [\"other.test:" << other_port << "\"]\n"
      << extra_policy_yaml;
    return y.str();
}

}  // namespace vaultgate::test
