#include "net/io/watchdog.hpp"

#include <algorithm>

namespace vaultgate::net {

void Watchdog::start() { wait_for_deadline(); }

// A plain completion handler rather than a coroutine: an idle connection then
// holds one small timer operation for its watchdog, not a coroutine's frames.
void Watchdog::wait_for_deadline() {
    timer_.expires_at(deadline_);
    timer_.async_wait([self = shared_from_this()](const error_code&) { self->on_timer(); });
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

void Watchdog::on_timer() {
    if (stopped_) return;  // the last reference to a finished connection's watchdog goes here
    // Otherwise the deadline passed, moved, or was brought forward (woken to reschedule).
    if (clock::now() >= deadline_) {
        expired_ = true;
        deadline_ = killed_ ? clock::now() + std::chrono::milliseconds(100) : clock::time_point::max();
        cancel_all();
    }
    wait_for_deadline();
}

}  // namespace vaultgate::net
