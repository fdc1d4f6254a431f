#pragma once
// Resolve once, check every address, connect only to an address that was
// checked. The one path by which vaultgate opens an outbound connection.
#include "net/io/watchdog.hpp"
#include "net/upstream/runtime.hpp"
#include "vaultgate/egress/host.hpp"
#include "vaultgate/egress/policy.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vaultgate::net {

// Name resolution off the I/O threads. getaddrinfo blocks, and Asio's own
// resolver runs every lookup of an io_context on one background thread, so one
// slow DNS answer would hold up every other lookup behind it. Here each lookup
// runs on a small pool and wakes its coroutine when done or when it times out.
struct ResolveResult {
    error_code error;
    bool timed_out = false;
    std::vector<tcp::endpoint> endpoints;
};

class ResolverPool {
public:
    explicit ResolverPool(std::size_t threads) : pool_(threads) {}
    ~ResolverPool() { pool_.join(); }
    ResolverPool(const ResolverPool&) = delete;
    ResolverPool& operator=(const ResolverPool&) = delete;

    // Resolves on the pool; the coroutine resumes on its own executor.
    awaitable<ResolveResult> resolve(std::string host, std::uint16_t port, clock::duration timeout);

    void stop() { pool_.stop(); }

private:
    asio::thread_pool pool_;
};

struct DialOutcome {
    DenyReason denied = DenyReason::none;  // policy refusal (403)
    error_code error;                      // resolve/connect failure (502/504)
    bool timed_out = false;
    bool resolving = false;  // the failure came from name resolution, before any connect
    tcp::endpoint peer;
    bool ok() const { return denied == DenyReason::none && !error && !timed_out; }
};

// Where a destination's addresses come from.
enum class AddressSource {
    literal,  // the destination is an IP address
    pinned,   // upstream.resolve: operator-chosen, exempt from the private-address rule
    dns,      // the resolver pool
};

// The addresses dial_checked would try for a destination, before any is checked.
struct Candidates {
    AddressSource source = AddressSource::dns;
    std::vector<tcp::endpoint> endpoints;
    DenyReason denied = DenyReason::none;  // a literal that is not a strict IP address
    error_code error;                      // the name did not resolve
    bool timed_out = false;                // the lookup took longer than limits.connect_timeout
};

// With the pins and connect_timeout of `settings` (the client connection's).
awaitable<Candidates> find_candidates(const Runtime& rt, const LiveSettings& settings, const Authority& dest);

// One candidate as dial_checked judges it: one of the proxy's own listeners is
// self_connection whatever the policy says; otherwise the policy's address rule.
AddressVerdict check_endpoint(const Runtime& rt, const EgressPolicy& policy, const tcp::endpoint& ep, bool pinned);

// Connects `socket` to dest, with the pins and connect_timeout of `settings`
// (the client connection's). Addresses pinned by upstream.resolve are exempt
// from the private-address rule; the proxy's own listeners never are.
// With `required` (transparent mode: the connection's original destination),
// that endpoint must be among the checked answers for dest's name, and it is
// the only one dialled; otherwise the outcome is destination_mismatch.
awaitable<DialOutcome> dial_checked(const Runtime& rt, const LiveSettings& settings, const EgressPolicy& policy,
                                    const Authority& dest, tcp::socket& socket, Watchdog& watchdog,
                                    std::optional<tcp::endpoint> required = std::nullopt);

// Whether connecting to ep would reach one of the proxy's own listeners: by
// its address, an unspecified one (0.0.0.0, ::), or, for a wildcard listener,
// any local address.
bool is_self_endpoint(const Runtime& rt, const tcp::endpoint& ep);

// Whether the accepted connection `client` comes from a socket vaultgate itself
// dialled; `original` is where it was sent before a NAT redirect, when known.
// Ask only once the client has sent something: the dialer records a socket
// after its connect completes, which may be after the accept, but always
// before anything is sent through it.
bool is_own_connection(const Runtime& rt, const tcp::socket& client,
                       const std::optional<tcp::endpoint>& original = std::nullopt);

// Why a dial that was not denied failed, as the access log names it:
// resolve_failed, upstream_refused, upstream_timeout or upstream_unreachable.
std::string_view dial_failure_reason(const DialOutcome& outcome);

// The same in words for the diagnostic log ("connection refused", "name
// lookup timed out"); names and system error texts only.
std::string dial_failure_detail(const DialOutcome& outcome);

IpAddress to_ip_address(const asio::ip::address& a);

// An endpoint as a destination, for replies and the access log.
Authority to_authority(const tcp::endpoint& ep);

}  // namespace vaultgate::net
