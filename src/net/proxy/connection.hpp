#pragma once
// Entry points of one accepted client connection.
#include "net/io/watchdog.hpp"
#include "net/upstream/runtime.hpp"
#include "vaultgate/egress/host.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/mem/read_buffer.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vaultgate::net {

// Responses (downloads) are read from the origin in pieces of up to four TLS
// records, on both fronts.
inline constexpr std::size_t upstream_read_size = 64 * 1024;

struct ClientContext {
    std::shared_ptr<Runtime> rt;
    std::shared_ptr<const LiveSettings> settings;  // as at the accept, for the whole connection
    std::shared_ptr<Watchdog> watchdog;
    std::string client_ip;
    std::string session_id;
};

// Milliseconds since `start`, for the access log.
double ms_since(clock::time_point start);

// An access-log entry of this connection with the fields every line has: the
// time, session and client, what was asked for where, and how long since start.
AccessLogEntry access_entry(const ClientContext& ctx, std::string_view ingress, std::string_view method,
                            const Authority& dest, clock::time_point start);

// What one request's access-log line says besides the connection's fields.
struct RequestLine {
    const RequestHead* request = nullptr;  // method and target; null: a head that could not be read
    const Binding* binding = nullptr;      // names the vault and service
    std::string_view credential;           // the auth type applied; empty: none
    int status = 0;
    std::string_view reason;
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
};

// Records the line of a request to `dest` received at `start`; `proto` is
// the client's HTTP version ("h1", "h2").
void record_request(const ClientContext& ctx, std::string_view ingress, const Authority& dest, clock::time_point start,
                    const RequestLine& line, std::string_view proto = "h1");

// A fresh context for an accepted socket: its watchdog started and watching it,
// the client's address (as the accept loop read it), Nagle off, non-blocking.
ClientContext make_client_context(std::shared_ptr<Runtime> rt, tcp::socket& client, std::string client_ip);

// What a connection's first exchange leads to. A tunnel or a MITM phase may
// last hours, so it runs only after the coroutine that decided it returned:
// that frame's request, buffers and state snapshot (whose replaced
// credentials must not stay in memory) are gone by then.
struct ConnectionPhase {
    enum class Kind { done, mitm, tunnel } kind = Kind::done;
    Authority dest;
    std::optional<tcp::socket> upstream;     // tunnel: dialled and checked
    std::string leftover;                    // tunnel: bytes the client sent after the CONNECT head
    std::optional<EgressPolicy> sni_policy;  // tunnel: judges the client's ClientHello (tunnel_sni_check)
    bool session_registered = false;         // in rt->connections, to be removed at the end
};

// Runs the phase, then ends the connection: out of rt->connections, client
// closed. `client` stays where it is (the watchdog watches it there).
awaitable<void> run_connection_phase(ClientContext& ctx, tcp::socket& client, ConnectionPhase next);

// The explicit proxy listener: reads CONNECT or an absolute-form request and dispatches.
awaitable<void> handle_proxy_client(std::shared_ptr<Runtime> rt, tcp::socket client, std::string client_ip);

// listen.transparent: redirected TLS, routed by SNI and the original destination.
awaitable<void> handle_transparent_client(std::shared_ptr<Runtime> rt, tcp::socket client, std::string client_ip);

// After "200 Connection established" to a bound host: TLS with a minted leaf and
// the request loop that injects credentials.
awaitable<void> run_mitm(ClientContext ctx, tcp::socket client, Authority dest);

// The requests of an intercepted connection whose client chose h2 (ALPN),
// after the TLS handshake: each stream runs the pipeline (h2_front.cpp).
awaitable<void> serve_h2_client(ClientContext& ctx, tls_stream& client, const Authority& dest);

// Absolute-form http:// requests on the proxy listener (plain_http.cpp):
// allowed only when the session's policy has allow_http for the host; never
// injected. `required` (transparent mode): the connection's original
// destination, the only address the request may go to, and only if the name
// resolves to it.
awaitable<void> handle_plain_http(ClientContext& ctx, tcp::socket& client, ReadBuffer& buf, RequestHead req,
                                  std::shared_ptr<const GatewayState> state, clock::time_point start,
                                  std::optional<tcp::endpoint> required = std::nullopt);

// The destination of a first request on the proxy listener (CONNECT
// host:port, or an absolute-form http:// URL's authority), for a refusal's
// log line; none when the target names no valid one.
std::optional<Authority> first_request_destination(const RequestHead& req);

// After "200 Connection established" to an allowed host: bytes spliced both ways.
// The sockets stay owned by the caller (whose watchdog already watches the client).
// With `sni_policy`, the client's first bytes go upstream only if a ClientHello
// among them names `dest` (check_tunnel_sni); else the refusal is logged and
// the tunnel ends.
awaitable<void> run_tunnel(ClientContext& ctx, tcp::socket& client, tcp::socket& upstream, const Authority& dest,
                           std::string leftover, const EgressPolicy* sni_policy);

}  // namespace vaultgate::net
