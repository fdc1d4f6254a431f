#pragma once
// Test fixtures that start real things on 127.0.0.1: a PKI in a temp dir, a TLS
// upstream that records what it received, the proxy in-process, and clients
// (a raw socket client and curl).
#include "temp_dir.hpp"
#include "vaultgate/crypto/ca.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/app/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace vaultgate::test {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

// Two CAs: the proxy's (what sandboxes trust) and the upstream's (what the
// proxy trusts), plus an untrusted one for "self-signed" upstreams.
struct TestPki {
    explicit TestPki(const TempDir& dir);
    std::string proxy_ca_cert, proxy_ca_key;
    std::string upstream_ca_cert;
    std::unique_ptr<CertificateAuthority> upstream_ca;
    std::unique_ptr<CertificateAuthority> rogue_ca;

    // Writes cert+key PEM files for host signed by upstream_ca (or rogue_ca).
    std::pair<std::string, std::string> server_files(const TempDir& dir, const std::string& host, bool rogue = false) const;
};

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
//   /scripted      the bytes last given to script_response(), as they are
// Everything received is recorded raw as well. With an empty cert_file it
// speaks plain HTTP instead of TLS.
class RecordingUpstream {
public:
    RecordingUpstream(const std::string& cert_file, const std::string& key_file,
                      const std::string& bind_ip = "127.0.0.1");
    ~RecordingUpstream();

    std::uint16_t port() const { return port_; }
    std::vector<ReceivedRequest> requests() const;
    std::string raw() const;                      // every byte of every connection, decrypted
    std::size_t connections() const { return connections_; }
    std::size_t tls_handshakes() const { return handshakes_; }
    // Connections whose serving ended: the peer closed, or a read failed.
    std::size_t connections_ended() const { return connections_ended_; }
    void release_sse();
    // What /scripted answers, byte for byte (1xx heads, odd framing, ...).
    void script_response(std::string raw);
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

// The proxy, in-process, on 127.0.0.1:0, from YAML text.
class ProxyUnderTest {
public:
    explicit ProxyUnderTest(const std::string& yaml, unsigned threads = 2);
    ~ProxyUnderTest();
    std::uint16_t port() const { return server_->proxy_port(); }
    Server& server() { return *server_; }
    const Config& config() const { return config_; }
    std::string access_log_text() const;   // the file the config's log.access names
    bool wait_for_log(const std::string& needle, int timeout_ms = 5000) const;

private:
    Config config_;
    std::unique_ptr<Server> server_;
};

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
    void write(const std::string& bytes);       // over TLS when started
    // Reads one HTTP response (head + body by Content-Length, chunked, or until close).
    struct Response {
        int status = 0;
        std::string head;
        std::string body;
        bool closed = false;   // the proxy closed the connection after it
    };
    std::optional<Response> read_response(int timeout_ms = 10000);
    // True once the peer has closed (reads EOF within timeout).
    bool closed_by_peer(int timeout_ms = 5000);
    std::string read_some(int timeout_ms = 5000);
    void close();
    void reset();   // closes with a TCP reset (SO_LINGER 0), as a crashed client would

private:
    std::size_t read_more(int timeout_ms);
    asio::io_context ioc_;
    ssl::context tls_{ssl::context::tls_client};
    tcp::socket socket_{ioc_};
    std::unique_ptr<ssl::stream<tcp::socket&>> tls_stream_;
    std::string buffer_;
    bool eof_ = false;
};

// `vaultgate serve` as a child process (the real binary, signals and all). The
// config should listen on port 0; the ports are read from the start-up line.
class ServeProcess {
public:
    // `max_files` > 0 lowers the child's RLIMIT_NOFILE before exec.
    // `wrapper`, when given, runs instead of the binary with the binary and the
    // config path as its last two arguments (e.g. to enter a mount namespace).
    ServeProcess(const std::string& config_path, const std::map<std::string, std::string>& env = {},
                 int max_files = 0, const std::vector<std::string>& wrapper = {});
    int pid() const { return pid_; }
    long rss_kib() const;            // resident set of the child, from /proc
    double cpu_seconds() const;      // user + system CPU time of the child
    ~ServeProcess();
    bool started() const { return proxy_port_ != 0; }
    std::uint16_t proxy_port() const { return proxy_port_; }
    std::uint16_t admin_port() const { return admin_port_; }
    void signal(int sig);
    int wait_exit(int timeout_s = 30);          // exit code, or -1 on timeout
    std::string stderr_text();                  // everything it wrote so far
    // A value (a credential the test hands the proxy through the admin API or
    // the bootstrapper) that must never appear in the proxy's stderr; checked
    // when this object goes, as the harness secret and the env values are.
    void forbid_in_stderr(std::string value) { forbidden_in_stderr_.push_back(std::move(value)); }

private:
    void read_stderr(int timeout_ms);
    int pid_ = -1;
    int err_fd_ = -1;
    std::string err_;
    std::vector<std::string> forbidden_in_stderr_;
    std::uint16_t proxy_port_ = 0, admin_port_ = 0;
    int exit_code_ = -1;
};

// A minimal HTTP client for the admin API (JSON bodies).
struct HttpResult {
    int status = 0;
    std::string head;
    std::string body;
};
HttpResult admin_request(std::uint16_t port, const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body = "");

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};
// Runs argv (no shell) with env additions; stdin from `input`.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input = "",
                          const std::map<std::string, std::string>& env = {}, int timeout_s = 60);

// A config for `vaultgate serve` as a child process: ports 0, an admin token
// and a master key written into `dir`, api.bound.test bound to the test secret,
// other.test allowed, and a default session. `limits` and `extra` are appended
// YAML (a `limits:` block body, and further top-level keys).
std::string serve_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                         const std::string& limits = "", const std::string& allowed_extra = "");

// Stops the proxy, which writes its last batch of access-log lines, and returns
// the whole log: for checks that must see every line, such as "no secret".
std::string stop_and_read_access_log(std::unique_ptr<ProxyUnderTest>& proxy);

inline constexpr const char* serve_admin_token = "test-admin-token-0123456789abcdef";

// A port that was free a moment ago (for configs that must name a port up front).
std::uint16_t free_port(const std::string& ip = "127.0.0.1");

// Checks `condition` every 10 ms until it holds (true) or timeout_ms pass
// (false): for outcomes that follow a request asynchronously.
bool eventually(const std::function<bool()>& condition, int timeout_ms = 5000);

// Opens `count` clients with `open` and sends each `request` for /sse, then
// waits until the origin has all of them in flight, each on an upstream
// connection of its own (it holds /sse open until release_sse()).
std::vector<std::unique_ptr<RawClient>> hold_sse_exchanges(RecordingUpstream& origin, std::size_t count,
                                                           const std::function<std::unique_ptr<RawClient>()>& open,
                                                           const std::string& request);

// Releases the held /sse responses and expects each client to get its 200.
void finish_sse_exchanges(RecordingUpstream& origin, std::vector<std::unique_ptr<RawClient>>& clients);

// A config with the proxy on port 0, the test PKI, a bound service for
// api.bound.test on the upstream's port, and other.test allowed.
std::string base_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                        const std::string& extra_service_yaml = "", const std::string& extra_policy_yaml = "");

// Has '/', '+' and '=' so that its base64 and URL-encoded forms differ from it.
inline constexpr const char* test_secret = "sk-real/SECRET+9f8e=7d6c5b4a";

}  // namespace vaultgate::test
