#pragma once
// What tells vaultgate that it is about to talk, or is talking, to itself: the
// host's interface addresses (a wildcard listener answers on each of them) and
// the connections vaultgate opened, so that one arriving back at a listener is
// recognised whatever address it was sent to.
#include "net/io/types.hpp"
#include "vaultgate/egress/address.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace vaultgate::net {

// An IPv4-mapped IPv6 address as its IPv4 form, which is what the kernel uses.
asio::ip::address unmapped(const asio::ip::address& a);

// This host's interface addresses (getifaddrs), or nothing if they cannot be read.
std::optional<std::vector<IpAddress>> interface_addresses();

// The interface addresses as last read, shared by every I/O thread.
class LocalAddresses {
public:
    using List = std::shared_ptr<const std::vector<IpAddress>>;
    List current() const { return addresses_.load(std::memory_order_acquire); }
    // Reads them again: addresses come and go (DHCP, a container's new
    // interface). Keeps the last list when they cannot be read.
    List refresh();

private:
    std::atomic<List> addresses_{std::make_shared<const std::vector<IpAddress>>()};
};

// vaultgate's own outbound connections, by (local, remote) endpoint. The
// dialer records each once connected; a connection accepted from one of them
// is vaultgate talking to itself. The sockets' owners (tunnels, the upstream
// pools, MITM sessions) close them wherever an exchange ends, so an entry goes
// once its descriptor no longer names that connection: looked at on every
// match, and swept whenever the table has doubled since the last sweep.
class OutboundSockets {
public:
    void add(tcp::socket& socket);
    // Whether a connection accepted from `peer`, addressed to `reached` (the
    // listener's own endpoint, or where it was sent before NAT), is one of ours.
    bool contains(const tcp::endpoint& peer, const tcp::endpoint& reached) const;

private:
    using Key = std::pair<tcp::endpoint, tcp::endpoint>;  // local, remote; unmapped
    static constexpr std::size_t min_sweep = 1024;
    void sweep_closed();

    mutable std::mutex mutex_;
    std::map<Key, int> fds_;
    std::size_t sweep_at_ = min_sweep;
};

}  // namespace vaultgate::net
