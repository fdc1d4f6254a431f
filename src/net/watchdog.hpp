#pragma once
// One timer per connection that enforces whichever timeout applies to the
// current phase (handshake, headers, idle, upstream). Arming only moves a
// deadline; the timer wakes at the old one, sees it moved and sleeps again, so
// re-arming per read costs no timer cancellation. On expiry it cancels the
// registered sockets: their pending operations fail and the connection's
// coroutine, seeing expired(), answers 408/504 or closes.
#include "types.hpp"

#include <memory>
#include <vector>

namespace vaultgate::net {

class Watchdog : public std::enable_shared_from_this<Watchdog> {
public:
    explicit Watchdog(asio::any_io_executor ex) : timer_(ex) {}

    void start();                               // spawns the timer loop
    void arm(clock::duration timeout);          // deadline = now + timeout; clears expired()
    void disarm();
    void stop();                                // connection finished: end the loop
    bool expired() const { return expired_; }
    void watch(tcp::socket& s) { sockets_.push_back(&s); }
    void unwatch(tcp::socket& s);

private:
    static awaitable<void> loop(std::shared_ptr<Watchdog> self);

    asio::steady_timer timer_;
    clock::time_point deadline_ = clock::time_point::max();
    bool expired_ = false;
    bool stopped_ = false;
    std::vector<tcp::socket*> sockets_;
};

}  // namespace vaultgate::net
