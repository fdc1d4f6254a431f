#include "watchdog.hpp"

#include <algorithm>

namespace vaultgate::net {

void Watchdog::start() {
    asio::co_spawn(timer_.get_executor(), loop(shared_from_this()), asio::detached);
}

void Watchdog::arm(clock::duration timeout) {
    expired_ = false;
    auto next = clock::now() + timeout;
    bool earlier = next < deadline_;
    deadline_ = next;
    // Only a deadline earlier than the one the timer sleeps towards needs a wake-up.
    if (earlier) timer_.cancel();
}

void Watchdog::disarm() { deadline_ = clock::time_point::max(); }

void Watchdog::stop() {
    stopped_ = true;
    sockets_.clear();
    timer_.cancel();
}

void Watchdog::unwatch(tcp::socket& s) { std::erase(sockets_, &s); }

awaitable<void> Watchdog::loop(std::shared_ptr<Watchdog> self) {
    while (!self->stopped_) {
        self->timer_.expires_at(self->deadline_);
        co_await self->timer_.async_wait(use_tuple);
        if (self->stopped_) break;
        if (clock::now() < self->deadline_) continue;  // moved, or woken to reschedule
        self->expired_ = true;
        self->deadline_ = clock::time_point::max();
        for (auto* s : self->sockets_) {
            error_code ignored;
            s->cancel(ignored);
        }
    }
}

}  // namespace vaultgate::net
