#include "net/mint/token_broker.hpp"

#include <algorithm>
#include <vector>

namespace vaultgate::net {

// One fetch under way and the requests waiting for it. Each waiter sleeps on a
// timer of its own executor; the fetch wakes it by posting there.
struct TokenBroker::Flight {
    bool done = false;  // under the broker's mutex, like the rest
    TokenGrant result;
    std::vector<std::shared_ptr<asio::steady_timer>> waiters;
};

namespace {

std::string slot_key(const Binding& binding) { return binding.vault->name + '\n' + binding.service->id; }

// Wakes a waiter on its own thread; a wait that starts after this ends at once.
void wake(const std::shared_ptr<asio::steady_timer>& timer) {
    asio::post(timer->get_executor(), [timer] { timer->expires_at(asio::steady_timer::time_point::min()); });
}

}  // namespace

std::chrono::seconds token_backoff(unsigned failures) {
    std::chrono::seconds window = TokenBroker::first_backoff;
    for (unsigned i = 1; i < failures && window < TokenBroker::longest_backoff; ++i) window *= 2;
    return std::min<std::chrono::seconds>(window, TokenBroker::longest_backoff);
}

awaitable<TokenGrant> TokenBroker::token(Runtime& rt, const Binding& binding) {
    const std::string_view vault = binding.vault->name;
    const std::string_view service = binding.service->id;
    std::string key = slot_key(binding);
    const std::string& digest = binding.service->inputs_digest;
    std::shared_ptr<Flight> joined;
    std::shared_ptr<Flight> started;
    std::shared_ptr<asio::steady_timer> timer;
    const auto executor = co_await asio::this_coro::executor;
    {
        std::lock_guard lock(mutex_);
        Slot& slot = slots_[key];
        if (slot.digest != digest) slot = Slot{digest, {}, {}, 0, {}};  // a rotated input: start over
        if (slot.current && std::chrono::system_clock::now() < slot.current->refresh_at) {
            rt.metrics.token_event(vault, service, TokenEvent::cache_hit);
            co_return TokenGrant{slot.current, {}};
        }
        slot.current.reset();  // due for refresh: the old token is let go
        if (slot.flight) {
            joined = slot.flight;
            timer = std::make_shared<asio::steady_timer>(executor, asio::steady_timer::time_point::max());
            joined->waiters.push_back(timer);
            rt.metrics.token_event(vault, service, TokenEvent::wait);
        } else if (slot.failures > 0 && std::chrono::steady_clock::now() < slot.retry_at) {
            co_return TokenGrant{nullptr, token_reason::backoff};
        } else {
            started = slot.flight = std::make_shared<Flight>();
        }
    }
    if (started) co_return co_await fetch(rt, binding, key, started);

    for (;;) {
        co_await timer->async_wait(use_tuple);
        std::lock_guard lock(mutex_);
        if (joined->done) co_return joined->result;
    }
}

awaitable<TokenGrant> TokenBroker::fetch(Runtime& rt, const Binding& binding, const std::string& key,
                                         const std::shared_ptr<Flight>& flight) {
    // Whatever ends this frame (even its destruction at shutdown), the
    // waiters are answered.
    struct Finisher {
        TokenBroker& broker;
        const std::string& key;
        const std::shared_ptr<Flight>& flight;
        bool finished = false;
        ~Finisher() {
            if (!finished) broker.finish(key, flight, TokenGrant{nullptr, token_reason::unreachable});
        }
    } finisher{*this, key, flight};

    const std::string_view vault = binding.vault->name;
    const std::string_view service = binding.service->id;
    rt.metrics.token_event(vault, service, TokenEvent::fetch);
    HttpsLimits limits = limits_;
    if (const auto settings = rt.settings())
        limits.total_timeout = std::min<clock::duration>(limits.total_timeout, settings->limits.response_timeout);
    FetchOutcome outcome;
    try {
        outcome = co_await fetch_token(rt, binding, limits);
    } catch (const std::exception&) {
        // Its text might quote the answer: not passed on.
        outcome.reason = token_reason::protocol;
        outcome.detail = "the answer could not be read";
    }
    TokenGrant grant;
    if (outcome.token) {
        const auto primary = binding.vault->credentials.find(binding.service->config.auth.primary_credential());
        grant.credential = make_minted_credential(
            *binding.service, primary == binding.vault->credentials.end() ? nullptr : &primary->second,
            std::move(outcome.token->token), outcome.token->refresh_at);
        if (!grant.credential) {
            outcome.reason = token_reason::unusable;
            outcome.detail = "the token occurs in the service's redaction placeholder";
        }
    }
    if (!grant.credential) {
        grant.reason = outcome.reason;
        rt.metrics.token_event(vault, service, TokenEvent::failure);
        const std::string where = "vault " + std::string(vault) + " service " + std::string(service);
        rt.upstream_warnings.warn(
            std::string(outcome.reason) + " " + where,
            "token for " + where + ": " + std::string(outcome.reason) + " (" + outcome.detail + ")");
    }
    finisher.finished = true;
    finish(key, flight, grant);
    co_return grant;
}

void TokenBroker::finish(const std::string& key, const std::shared_ptr<Flight>& flight, TokenGrant grant) {
    std::vector<std::shared_ptr<asio::steady_timer>> waiters;
    {
        std::lock_guard lock(mutex_);
        flight->done = true;
        flight->result = grant;
        waiters.swap(flight->waiters);
        // A slot started over (a rotation) while this fetch ran keeps nothing of it.
        const auto slot = slots_.find(key);
        if (slot != slots_.end() && slot->second.flight == flight) {
            Slot& s = slot->second;
            s.flight.reset();
            if (grant.credential) {
                s.current = std::move(grant.credential);
                s.failures = 0;
            } else {
                ++s.failures;
                s.retry_at = std::chrono::steady_clock::now() + token_backoff(s.failures);
            }
        }
    }
    for (const auto& timer : waiters) wake(timer);
}

void TokenBroker::forget_replaced(const GatewayState& state) {
    std::lock_guard lock(mutex_);
    for (auto it = slots_.begin(); it != slots_.end();) {
        const std::string& key = it->first;
        const auto cut = key.find('\n');
        const auto vault = state.vaults.find(key.substr(0, cut));
        bool keep = false;
        if (vault != state.vaults.end()) {
            const std::string_view id = std::string_view(key).substr(cut + 1);
            for (const auto& service : vault->second.services)
                if (service.id == id && service.config.auth.is_minted())
                    keep = service.inputs_digest == it->second.digest;
        }
        // A fetch under way finishes for its waiters; its result is not kept.
        it = keep ? std::next(it) : slots_.erase(it);
    }
}

std::size_t TokenBroker::entries() const {
    std::lock_guard lock(mutex_);
    return slots_.size();
}

}  // namespace vaultgate::net
