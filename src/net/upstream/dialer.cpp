#include "net/upstream/dialer.hpp"

#include <netdb.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace vaultgate::net {

namespace {

// Shared between the waiting coroutine and the pool job; the job may finish
// after the coroutine gave up, so nothing here belongs to either alone.
struct PendingLookup {
    explicit PendingLookup(asio::any_io_executor ex) : wake(ex) {}
    asio::steady_timer wake;
    bool done = false;
    ResolveResult result;
};

ResolveResult blocking_lookup(const std::string& host, std::uint16_t port) {
    ResolveResult r;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    addrinfo* list = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
    if (rc != 0) {
        r.error =
            rc == EAI_NONAME || rc == EAI_NODATA ? asio::error::host_not_found : asio::error::host_not_found_try_again;
        return r;
    }
    for (addrinfo* ai = list; ai; ai = ai->ai_next) {
        tcp::endpoint ep;
        if (ai->ai_family == AF_INET && ai->ai_addrlen <= ep.capacity()) {
            std::memcpy(ep.data(), ai->ai_addr, ai->ai_addrlen);
            ep.resize(ai->ai_addrlen);
        } else if (ai->ai_family == AF_INET6 && ai->ai_addrlen <= ep.capacity()) {
            std::memcpy(ep.data(), ai->ai_addr, ai->ai_addrlen);
            ep.resize(ai->ai_addrlen);
        } else {
            continue;
        }
        ep.port(port);
        bool seen = false;
        for (const auto& e : r.endpoints) seen = seen || e == ep;
        if (!seen) r.endpoints.push_back(ep);
    }
    ::freeaddrinfo(list);
    if (r.endpoints.empty()) r.error = asio::error::host_not_found;
    return r;
}

}  // namespace

awaitable<ResolveResult> ResolverPool::resolve(std::string host, std::uint16_t port, clock::duration timeout) {
    auto ex = co_await asio::this_coro::executor;
    auto pending = std::make_shared<PendingLookup>(ex);
    pending->wake.expires_after(timeout);
    asio::post(pool_, [pending, host = std::move(host), port, ex] {
        auto result = blocking_lookup(host, port);
        // Back on the requester's executor, where `pending` is otherwise touched.
        asio::post(ex, [pending, result = std::move(result)]() mutable {
            pending->result = std::move(result);
            pending->done = true;
            pending->wake.cancel();
        });
    });
    co_await pending->wake.async_wait(use_tuple);
    if (!pending->done) {
        ResolveResult r;
        r.timed_out = true;
        co_return r;
    }
    co_return std::move(pending->result);
}

std::string_view dial_failure_reason(const DialOutcome& outcome) {
    // A lookup that ran out of time stays a timeout (504), as documented.
    if (outcome.timed_out) return "upstream_timeout";
    if (outcome.resolving) return "resolve_failed";
    if (outcome.error == asio::error::connection_refused) return "upstream_refused";
    return "upstream_unreachable";
}

std::string dial_failure_detail(const DialOutcome& outcome) {
    if (outcome.resolving) {
        if (outcome.timed_out) return "name lookup timed out";
        return outcome.error == asio::error::host_not_found ? "the name does not resolve"
                                                            : "name lookup failed (temporary DNS failure)";
    }
    if (outcome.timed_out) return "connect timed out";
    return "connect failed: " + outcome.error.message();
}

IpAddress to_ip_address(const asio::ip::address& a) {
    IpAddress ip;
    if (a.is_v4()) {
        auto b = a.to_v4().to_bytes();
        ip = IpAddress::v4(b[0], b[1], b[2], b[3]);
    } else {
        ip.v6 = true;
        auto b = a.to_v6().to_bytes();
        std::copy(b.begin(), b.end(), ip.bytes.begin());
    }
    return ip;
}

Authority to_authority(const tcp::endpoint& ep) {
    const auto addr = unmapped(ep.address());
    return {addr.to_string(), ep.port(), addr.is_v6() ? HostKind::ipv6 : HostKind::ipv4};
}

namespace {

asio::ip::address to_asio(const IpAddress& ip) {
    if (!ip.v6) return asio::ip::address_v4({ip.bytes[0], ip.bytes[1], ip.bytes[2], ip.bytes[3]});
    asio::ip::address_v6::bytes_type b;
    std::copy(ip.bytes.begin(), ip.bytes.end(), b.begin());
    return asio::ip::address_v6(b);
}

std::vector<ListenerAddress> listener_addresses(const std::vector<tcp::endpoint>& endpoints) {
    std::vector<ListenerAddress> out;
    out.reserve(endpoints.size());
    for (const auto& ep : endpoints) out.push_back({to_ip_address(ep.address()), ep.port()});
    return out;
}

bool wildcard_listener_on(std::uint16_t port, const std::vector<tcp::endpoint>& listeners) {
    return std::any_of(listeners.begin(), listeners.end(),
                       [port](const auto& l) { return l.port() == port && unmapped(l.address()).is_unspecified(); });
}

}  // namespace

bool is_self_endpoint(const Runtime& rt, const tcp::endpoint& ep) {
    const auto listeners = listener_addresses(rt.self_endpoints);
    const auto dest = to_ip_address(ep.address());
    if (reaches_listener(dest, ep.port(), listeners, *rt.local_addresses.current())) return true;
    // The interface addresses read earlier may be out of date; on a wildcard
    // listener's port, where one would matter, they are read again.
    if (!wildcard_listener_on(ep.port(), rt.self_endpoints)) return false;
    return reaches_listener(dest, ep.port(), listeners, *rt.local_addresses.refresh());
}

bool is_own_connection(const Runtime& rt, const tcp::socket& client, const std::optional<tcp::endpoint>& original) {
    error_code ec_peer, ec_local;
    const auto peer = client.remote_endpoint(ec_peer);
    const auto local = client.local_endpoint(ec_local);
    if (ec_peer || ec_local) return false;
    return rt.outbound_sockets.contains(peer, local) || (original && rt.outbound_sockets.contains(peer, *original));
}

awaitable<Candidates> find_candidates(const Runtime& rt, const LiveSettings& settings, const Authority& dest) {
    Candidates out;
    if (dest.kind != HostKind::name) {
        out.source = AddressSource::literal;
        auto ip = parse_ip_strict(dest.host);
        if (!ip) {
            out.denied = DenyReason::ip_literal_not_allowed;
            co_return out;
        }
        out.endpoints.emplace_back(to_asio(*ip), dest.port);
    } else if (auto it = settings.upstream_resolve.find(dest.host); it != settings.upstream_resolve.end()) {
        out.source = AddressSource::pinned;
        auto ip = parse_ip_strict(it->second);
        if (!ip) {
            out.error = asio::error::host_not_found;
            co_return out;
        }
        out.endpoints.emplace_back(to_asio(*ip), dest.port);
    } else {
        auto resolved = co_await rt.resolver->resolve(dest.host, dest.port, settings.limits.connect_timeout);
        out.timed_out = resolved.timed_out;
        out.error = resolved.error;
        out.endpoints = std::move(resolved.endpoints);
    }
    co_return out;
}

AddressVerdict check_endpoint(const Runtime& rt, const EgressPolicy& policy, const tcp::endpoint& ep, bool pinned) {
    AddressVerdict verdict = judge_address(policy, to_ip_address(ep.address()), pinned);
    if (is_self_endpoint(rt, ep)) {
        verdict.reason = DenyReason::self_connection;
        verdict.key = PolicyKey::none;
        verdict.cidr = nullptr;
    }
    return verdict;
}

awaitable<DialOutcome> dial_checked(const Runtime& rt, const LiveSettings& settings, const EgressPolicy& policy,
                                    const Authority& dest, tcp::socket& socket, Watchdog& watchdog,
                                    std::optional<tcp::endpoint> required) {
    DialOutcome out;
    Candidates found = co_await find_candidates(rt, settings, dest);
    if (found.denied != DenyReason::none || found.error || found.timed_out) {
        out.denied = found.denied;
        out.error = found.error;
        out.timed_out = found.timed_out;
        out.resolving = found.error || found.timed_out;
        co_return out;
    }
    std::vector<tcp::endpoint> candidates = std::move(found.endpoints);
    const bool pinned = found.source == AddressSource::pinned;

    // Every candidate is checked before any is dialled: one denied answer
    // refuses the name, so DNS cannot mix a private address into a public set.
    for (const auto& ep : candidates) {
        auto reason = check_endpoint(rt, policy, ep, pinned).reason;
        if (reason != DenyReason::none) {
            out.denied = reason;
            co_return out;
        }
    }

    if (required) {
        auto wanted = tcp::endpoint(unmapped(required->address()), required->port());
        bool found = false;
        for (const auto& ep : candidates)
            found = found || (unmapped(ep.address()) == wanted.address() && ep.port() == wanted.port());
        if (!found) {
            out.denied = DenyReason::destination_mismatch;
            co_return out;
        }
        candidates = {wanted};
    }

    watchdog.watch(socket);
    // limits.connect_timeout bounds the TCP connects together (the lookup
    // above had its own). An address that does not answer gets its share of
    // the time left, so the next ones are still tried: an unreachable IPv6
    // address must not hide a working IPv4 one. A share is at least 2 s (or
    // all that is left), room for one SYN retransmission (Linux: after 1 s),
    // so a name with many addresses does not starve each of them.
    const auto deadline = clock::now() + settings.limits.connect_timeout;
    constexpr clock::duration min_share = std::chrono::seconds(2);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const auto& ep = candidates[i];
        const auto left = deadline - clock::now();
        if (left <= clock::duration::zero()) {
            out.timed_out = true;
            break;
        }
        error_code ignored;
        socket.close(ignored);
        const auto share = left / static_cast<clock::rep>(candidates.size() - i);
        watchdog.arm(std::max(share, std::min(left, min_share)));
        auto [ec] = co_await socket.async_connect(ep, use_tuple);
        if (watchdog.killed()) {
            // The connection is being closed (session gone, drain): no further address.
            out.timed_out = true;
            break;
        }
        if (watchdog.expired()) {
            out.timed_out = true;
            continue;
        }
        out.timed_out = false;
        if (!ec) {
            socket.set_option(tcp::no_delay(true), ignored);
            // Before anything is sent through it, so that a connection that
            // loops back to a listener is known there as ours.
            rt.outbound_sockets.add(socket);
            out.peer = ep;
            out.error = {};
            watchdog.unwatch(socket);
            co_return out;
        }
        out.error = ec;
    }
    watchdog.unwatch(socket);
    error_code ignored;
    socket.close(ignored);
    co_return out;
}

}  // namespace vaultgate::net
