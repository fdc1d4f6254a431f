#pragma once
// Name resolution off the I/O threads. getaddrinfo blocks, and Asio's own
// resolver runs every lookup of an io_context on one background thread, so one
// slow DNS answer would hold up every other lookup behind it. Here each lookup
// runs on a small pool and wakes its coroutine when done or when it times out.
#include "net/io/types.hpp"

#include <string>
#include <vector>

namespace vaultgate::net {

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

}  // namespace vaultgate::net
