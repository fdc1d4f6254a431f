#pragma once
// What every connection shares: the config, the current state snapshot, the
// settings a reload replaces, the CA and leaf cache, the client-facing TLS
// context, the access log. Built once per server.
#include "net/io/connection_registry.hpp"
#include "net/io/types.hpp"
#include "net/upstream/self_connection.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/crypto/ca.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/observe/access_log.hpp"
#include "vaultgate/observe/metrics.hpp"
#include "vaultgate/observe/warn_limiter.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/state/removed_sessions.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::net {

class ResolverPool;  // dialer.hpp
class TokenBroker;   // net/mint/token_broker.hpp, a layer above: only held here

// Request-head limits from the config: the request line is capped at 16 KiB
// (414) or header_bytes, whichever is smaller.
inline HeadLimits request_head_limits(const Limits& limits) {
    HeadLimits h;
    h.max_head_bytes = limits.header_bytes;
    h.max_header_count = limits.header_count;
    h.max_request_line = std::min<std::size_t>(limits.header_bytes, 16384);
    return h;
}

// How often one upstream failure (a reason at one destination) may be warned of.
inline constexpr std::chrono::seconds upstream_warning_interval{10};

// What a SIGHUP replaces (docs/reference/configuration.md, "Reload
// behaviour"). A client connection takes the current settings when it is
// accepted and keeps them to its end, so one connection never mixes two.
struct LiveSettings {
    Limits limits;
    std::map<std::string, std::string> upstream_resolve;  // normalised host -> IP literal
    std::shared_ptr<ssl::context> upstream_tls;           // verified, to bound origins
    // Differs between reloads: pooled upstream connections opened under
    // other pins or another trust store are never handed to this generation.
    std::uint64_t generation = 0;
    std::string mitm_alpn;  // mitm.alpn in ALPN wire format, for client-facing handshakes
};

// Builds the settings of `config`, with a new upstream TLS context; throws
// std::runtime_error naming upstream.ca_file when it cannot be loaded.
std::shared_ptr<const LiveSettings> make_live_settings(const Config& config, std::uint64_t generation);

struct Runtime {
    Config config;  // as started; what a reload may change is read from settings()
    std::unique_ptr<CertificateAuthority> ca;
    std::unique_ptr<LeafCache> leaves;
    ssl::context client_facing_tls{ssl::context::tls_server};  // MITM side, leaf per connection
    std::unique_ptr<AccessLog> log;
    std::vector<tcp::endpoint> self_endpoints;  // our own listeners, never dialled
    // Kept by the dialer, to which the Runtime is const (see dialer.hpp).
    mutable LocalAddresses local_addresses;    // what a wildcard listener answers on
    mutable OutboundSockets outbound_sockets;  // connections vaultgate opened
    ResolverPool* resolver = nullptr;          // owned by the server
    std::shared_ptr<TokenBroker> token_broker;  // minted credentials; set by the server
    std::atomic<bool> draining{false};
    ConnectionRegistry connections;
    Metrics metrics;
    mutable WarnLimiter upstream_warnings{upstream_warning_interval};
    RemovedSessions removed_sessions;  // for the reason of a 407

    // The state current now. (Not cached per thread: a cached snapshot would
    // keep a replaced state, and the credentials in it, alive in every thread
    // that sees no further request.)
    std::shared_ptr<const GatewayState> snapshot() const { return state_.load(std::memory_order_acquire); }

    void publish(std::shared_ptr<const GatewayState> next) {
        auto before = state_.exchange(next, std::memory_order_acq_rel);
        if (before && next) removed_sessions.note(*before, *next, std::chrono::system_clock::now());
    }

    // The settings current now (set before the first connection is accepted).
    std::shared_ptr<const LiveSettings> settings() const { return settings_.load(std::memory_order_acquire); }
    void publish_settings(std::shared_ptr<const LiveSettings> next) {
        settings_.store(std::move(next), std::memory_order_release);
    }

    // One finished request or tunnel: the access log line and its counters.
    void record(const AccessLogEntry& e) {
        log->write(e);
        metrics.request(e.ingress, e.status);
        if (!e.proto.empty()) metrics.proto_request(e.proto);
        if (e.ingress == "denied" && !e.reason.empty()) metrics.denial(e.reason);
    }

private:
    std::atomic<std::shared_ptr<const GatewayState>> state_;
    std::atomic<std::shared_ptr<const LiveSettings>> settings_;
};

}  // namespace vaultgate::net
