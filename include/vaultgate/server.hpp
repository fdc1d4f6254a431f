#pragma once
// The running gateway: listeners, connection handling, upstream TLS. The
// interface keeps Asio out of the header so the CLI and tests that only drive
// it stay cheap to compile.
#include "vaultgate/access_log.hpp"
#include "vaultgate/config.hpp"
#include "vaultgate/gateway_state.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate {

class Server {
public:
    virtual ~Server() = default;

    // Binds every listener (throws std::runtime_error naming the address on
    // failure) and starts the worker threads. Returns once accepting.
    virtual void start() = 0;

    // Stops accepting, lets in-flight connections finish for up to `drain`,
    // then closes what is left. Idempotent; safe from any thread.
    virtual void stop(std::chrono::milliseconds drain) = 0;

    // Blocks until every worker thread has returned (after stop()).
    virtual void wait() = 0;

    // Actual bound ports (useful with port 0).
    virtual std::uint16_t proxy_port() const = 0;

    // Swaps in a new snapshot of vaults, sessions and policies; the next request uses it.
    virtual void replace_state(std::shared_ptr<const GatewayState> state) = 0;
    virtual std::shared_ptr<const GatewayState> state() const = 0;

    virtual AccessLog& access_log() = 0;
};

struct ServerOptions {
    unsigned threads = 0;     // 0 -> one per core
};

// Loads the CA and the upstream trust store named by config; throws
// std::runtime_error with a clear message when either is unusable.
std::unique_ptr<Server> make_server(const Config& config,
                                    std::shared_ptr<const GatewayState> state,
                                    ServerOptions options = {});

}  // namespace vaultgate
