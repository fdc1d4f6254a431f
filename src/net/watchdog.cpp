#include "watchdog.hpp"

#include <algorithm>

namespace vaultgate::net {

void Watchdog::start() {
    asio::co_spawn(timer_.get_executor(), loop(shared_from_this()), asio::detached);
}

void Watchdog::arm(clock::duration timeout) {
    expired_ = false;
    auto next = killed_ ? clock::now() : clock::now() + timeout;
    bool earlier = next < deadline_;
    deadline_ = next;
    // Only a deadline earlier than the one the timer sleeps towards needs a wake-up.
    if (earlier) timer_.cancel();
}

void Watchdog::disarm() {
    if (!killed_) deadline_ = clock::time_point::max();
}

void Watchdog::kill() {
    if (stopped_) return;
    killed_ = true;
    expired_ = true;
    cancel_all();
    deadline_ = clock::now();
    timer_.cancel();
}

void Watchdog::stop() {
    stopped_ = true;
    sockets_.clear();
    timer_.cancel();
}

void Watchdog::cancel_all() {
    for (const auto& w : sockets_) w.cancel(w.socket);
}

awaitable<void> Watchdog::loop(std::shared_ptr<Watchdog> self) {
    while (!self->stopped_) {
        self->timer_.expires_at(self->deadline_);
        co_await self->timer_.async_wait(use_tuple);
        if (self->stopped_) break;
        if (clock::now() < self->deadline_) continue;  // moved, or woken to reschedule
        self->expired_ = true;
        self->deadline_ = self->killed_ ? clock::now() + std::chrono::milliseconds(100) : clock::time_point::max();
        self->cancel_all();
    }
}

}  // namespace vaultgate::net
