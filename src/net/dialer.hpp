#pragma once
// Resolve once, check every address, connect only to an address that was
// checked. The one path by which vaultgate opens an outbound connection.
#include "runtime.hpp"
#include "watchdog.hpp"
#include "vaultgate/host.hpp"
#include "vaultgate/policy.hpp"

#include <optional>

namespace vaultgate::net {

struct DialOutcome {
    DenyReason denied = DenyReason::none;   // policy refusal (403)
    error_code error;                       // resolve/connect failure (502/504)
    bool timed_out = false;
    tcp::endpoint peer;
    bool ok() const { return denied == DenyReason::none && !error && !timed_out; }
};

// Connects `socket` to dest. Addresses pinned by upstream.resolve are exempt
// from the private-address rule; the proxy's own listeners never are.
// With `required` (transparent mode: the connection's original destination),
// that endpoint must be among the checked answers for dest's name, and it is
// the only one dialled; otherwise the outcome is destination_mismatch.
awaitable<DialOutcome> dial_checked(const Runtime& rt, const EgressPolicy& policy, const Authority& dest,
                                    tcp::socket& socket, Watchdog& watchdog,
                                    std::optional<tcp::endpoint> required = std::nullopt);

// Whether ep is one of the proxy's own listening endpoints.
bool is_self_endpoint(const Runtime& rt, const tcp::endpoint& ep);

IpAddress to_ip_address(const asio::ip::address& a);

}  // namespace vaultgate::net
