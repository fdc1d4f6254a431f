#pragma once
// The tokens of minted bindings, one cache per Runtime. A request asks for its
// binding's token and gets the cached one, or joins the one fetch under way
// for it, or starts that fetch; the worker threads each run their own
// io_context, so a waiter on another thread is woken on its own executor and
// no thread ever blocks. Entries are per service and per digest of the
// inputs (ServiceBinding::inputs_digest): a rotated input is a new key, and the old
// token is dropped (wiped once the last request using it ends).
//
// After a failed fetch the service backs off: requests within the window are
// refused at once (token_backoff), the first one after it fetches again. The
// window starts at 1 s and doubles to at most 30 s; a success or a rotation
// resets it. A fetch is bounded by the HttpsLimits given (at most 1 MiB of
// answer) and by limits.response_timeout when that is shorter.
#include "net/mint/minted_credential.hpp"
#include "net/mint/token_fetch.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace vaultgate::net {

// How long requests are refused after `failures` failed fetches in a row
// (at least one): 1 s, doubling, at most 30 s.
std::chrono::seconds token_backoff(unsigned failures);

// What a request gets: the credential, or the reason (a token_reason) it has none.
struct TokenGrant {
    std::shared_ptr<const MintedCredential> credential;
    std::string_view reason;
};

class TokenBroker {
public:
    static constexpr std::chrono::seconds first_backoff{1};
    static constexpr std::chrono::seconds longest_backoff{30};

    explicit TokenBroker(HttpsLimits limits = {}) : limits_(limits) {}
    TokenBroker(const TokenBroker&) = delete;
    TokenBroker& operator=(const TokenBroker&) = delete;

    // The current token of `binding` (a minted auth type with every credential
    // it reads present). Counts fetches, failures, cache hits and waits in
    // rt.metrics, and warns of failures (names only) on rt.upstream_warnings.
    awaitable<TokenGrant> token(Runtime& rt, const Binding& binding);

    // Drops the entries of services that `state` no longer has, or whose
    // inputs it changed: their tokens are not kept until the next request.
    void forget_replaced(const GatewayState& state);

    // Entries held now (services with a token, a fetch or a backoff).
    std::size_t entries() const;

private:
    struct Flight;
    struct Slot {
        std::string digest;
        std::shared_ptr<const MintedCredential> current;
        std::shared_ptr<Flight> flight;  // the fetch under way, if any
        unsigned failures = 0;           // in a row
        std::chrono::steady_clock::time_point retry_at;
    };

    // Run by the request that found no token and no fetch; `key` and `flight`
    // belong to its frame, which awaits this one at once.
    awaitable<TokenGrant> fetch(Runtime& rt, const Binding& binding, const std::string& key,
                                const std::shared_ptr<Flight>& flight);
    void finish(const std::string& key, const std::shared_ptr<Flight>& flight, TokenGrant grant);

    HttpsLimits limits_;
    mutable std::mutex mutex_;
    std::map<std::string, Slot, std::less<>> slots_;  // by vault name '\n' service id
};

}  // namespace vaultgate::net
