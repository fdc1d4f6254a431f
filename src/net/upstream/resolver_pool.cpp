#include "net/upstream/resolver_pool.hpp"

#include <netdb.h>

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
        r.error = rc == EAI_NONAME || rc == EAI_NODATA ? asio::error::host_not_found : asio::error::host_not_found_try_again;
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

}  // namespace vaultgate::net
