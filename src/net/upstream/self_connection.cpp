#include "net/upstream/self_connection.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace vaultgate::net {

namespace {

tcp::endpoint unmapped_endpoint(const tcp::endpoint& ep) { return {unmapped(ep.address()), ep.port()}; }

std::optional<IpAddress> ip_of(const sockaddr* sa) {
    IpAddress ip;
    if (sa->sa_family == AF_INET) {
        std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
        return ip;
    }
    if (sa->sa_family == AF_INET6) {
        ip.v6 = true;
        std::memcpy(ip.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
        return ip;
    }
    return std::nullopt;
}

// The socket's own or its peer's endpoint, read from the descriptor alone.
std::optional<tcp::endpoint> endpoint_of_fd(int fd, bool peer) {
    tcp::endpoint ep;
    auto len = static_cast<socklen_t>(ep.capacity());
    int rc = peer ? ::getpeername(fd, ep.data(), &len) : ::getsockname(fd, ep.data(), &len);
    if (rc != 0 || len > ep.capacity()) return std::nullopt;
    const auto family = ep.data()->sa_family;
    if (family != AF_INET && family != AF_INET6) return std::nullopt;
    ep.resize(len);
    return unmapped_endpoint(ep);
}

// The descriptor is still open and still this connection (not closed, nor
// reused by another socket).
bool still_connected(int fd, const tcp::endpoint& local, const tcp::endpoint& remote) {
    return endpoint_of_fd(fd, false) == local && endpoint_of_fd(fd, true) == remote;
}

}  // namespace

asio::ip::address unmapped(const asio::ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return a;
}

std::optional<std::vector<IpAddress>> interface_addresses() {
    ifaddrs* raw = nullptr;
    if (::getifaddrs(&raw) != 0) return std::nullopt;
    std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> list(raw, ::freeifaddrs);
    std::vector<IpAddress> out;
    for (const ifaddrs* i = list.get(); i; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        if (auto ip = ip_of(i->ifa_addr)) out.push_back(*ip);
    }
    return out;
}

LocalAddresses::List LocalAddresses::refresh() {
    auto read = interface_addresses();
    if (!read) return current();
    auto list = std::make_shared<const std::vector<IpAddress>>(std::move(*read));
    addresses_.store(list, std::memory_order_release);
    return list;
}

void OutboundSockets::add(tcp::socket& socket) {
    error_code ec_local, ec_remote;
    auto local = socket.local_endpoint(ec_local);
    auto remote = socket.remote_endpoint(ec_remote);
    if (ec_local || ec_remote) return;  // not connected after all: it carries nothing
    std::lock_guard lock(mutex_);
    fds_[{unmapped_endpoint(local), unmapped_endpoint(remote)}] = socket.native_handle();
    if (fds_.size() >= sweep_at_) sweep_closed();
}

bool OutboundSockets::contains(const tcp::endpoint& peer, const tcp::endpoint& reached) const {
    const Key key{unmapped_endpoint(peer), unmapped_endpoint(reached)};
    std::lock_guard lock(mutex_);
    auto it = fds_.find(key);
    return it != fds_.end() && still_connected(it->second, key.first, key.second);
}

void OutboundSockets::sweep_closed() {
    std::erase_if(
        fds_, [](const auto& entry) { return !still_connected(entry.second, entry.first.first, entry.first.second); });
    sweep_at_ = std::max(min_sweep, 2 * fds_.size());
}

}  // namespace vaultgate::net
