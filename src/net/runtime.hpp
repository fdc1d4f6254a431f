#pragma once
// What every connection shares: the config, the current state snapshot, the CA
// and leaf cache, both TLS contexts, the access log. Built once per server.
#include "resolver_pool.hpp"
#include "types.hpp"
#include "vaultgate/access_log.hpp"
#include "vaultgate/ca.hpp"
#include "vaultgate/config.hpp"
#include "vaultgate/gateway_state.hpp"

#include <atomic>
#include <memory>
#include <vector>

namespace vaultgate::net {

struct Runtime {
    Config config;
    std::atomic<std::shared_ptr<const GatewayState>> state;
    std::unique_ptr<CertificateAuthority> ca;
    std::unique_ptr<LeafCache> leaves;
    ssl::context client_facing_tls{ssl::context::tls_server};  // MITM side, leaf per connection
    ssl::context upstream_tls{ssl::context::tls_client};       // verified, to bound origins
    std::unique_ptr<AccessLog> log;
    std::vector<tcp::endpoint> self_endpoints;                  // our own listeners, never dialled
    ResolverPool* resolver = nullptr;                           // owned by the server
    std::atomic<bool> draining{false};

    std::shared_ptr<const GatewayState> snapshot() const { return state.load(std::memory_order_acquire); }
};

}  // namespace vaultgate::net
