#pragma once
// What every connection shares: the config, the current state snapshot, the CA
// and leaf cache, both TLS contexts, the access log. Built once per server.
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
#include <memory>
#include <vector>

namespace vaultgate::net {

class ResolverPool;  // dialer.hpp

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

struct Runtime {
    Config config;
    std::unique_ptr<CertificateAuthority> ca;
    std::unique_ptr<LeafCache> leaves;
    ssl::context client_facing_tls{ssl::context::tls_server};  // MITM side, leaf per connection
    ssl::context upstream_tls{ssl::context::tls_client};       // verified, to bound origins
    std::unique_ptr<AccessLog> log;
    std::vector<tcp::endpoint> self_endpoints;  // our own listeners, never dialled
    // Kept by the dialer, to which the Runtime is const (see dialer.hpp).
    mutable LocalAddresses local_addresses;    // what a wildcard listener answers on
    mutable OutboundSockets outbound_sockets;  // connections vaultgate opened
    ResolverPool* resolver = nullptr;          // owned by the server
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

    // One finished request or tunnel: the access log line and its counters.
    void record(const AccessLogEntry& e) {
        log->write(e);
        metrics.request(e.ingress, e.status);
        if (e.ingress == "denied" && !e.reason.empty()) metrics.denial(e.reason);
    }

private:
    std::atomic<std::shared_ptr<const GatewayState>> state_;
};

}  // namespace vaultgate::net
