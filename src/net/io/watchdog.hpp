#pragma once
// One timer per connection that enforces whichever timeout applies to the
// current phase (handshake, headers, idle, upstream). Arming only moves a
// deadline; the timer wakes at the old one, sees it moved and sleeps again, so
// re-arming per read costs no timer cancellation. On expiry it cancels the
// registered sockets: their pending operations fail and the connection's
// coroutine, seeing expired(), answers 408/504 or closes.
#include "net/io/types.hpp"

#include <memory>
#include <vector>

namespace vaultgate::net {

class Watchdog : public std::enable_shared_from_this<Watchdog> {
public:
    explicit Watchdog(asio::any_io_executor ex) : timer_(ex) {}

    void start();                       // starts waiting for the deadline
    void arm(clock::duration timeout);  // deadline = now + timeout; clears expired()
    void disarm();
    void stop();  // connection finished: stop waiting
    // Ends the connection from outside (session deleted or expired, drain):
    // cancels now and keeps every later deadline at "now". Call on its executor.
    void kill();
    bool killed() const { return killed_; }
    asio::any_io_executor executor() { return timer_.get_executor(); }
    // True while the connection waits for a new request with nothing buffered:
    // a drain may close it without cutting anything short.
    void set_idle(bool idle) { idle_ = idle; }
    bool idle() const { return idle_; }
    bool expired() const { return expired_; }
    // Any socket type (TCP, unix): expiry cancels its pending operations.
    template <class Socket>
    void watch(Socket& s) {
        sockets_.push_back({&s, [](void* p) {
                                error_code ignored;
                                static_cast<Socket*>(p)->cancel(ignored);
                            }});
    }
    template <class Socket>
    void unwatch(Socket& s) {
        std::erase_if(sockets_, [&](const Watched& w) { return w.socket == &s; });
    }

private:
    void wait_for_deadline();
    void on_timer();

    asio::steady_timer timer_;
    clock::time_point deadline_ = clock::time_point::max();
    bool expired_ = false;
    bool stopped_ = false;
    bool killed_ = false;
    bool idle_ = false;
    void cancel_all();

    struct Watched {
        void* socket;
        void (*cancel)(void*);
    };
    std::vector<Watched> sockets_;
};

// Stops a connection's watchdog when the connection's coroutine frame goes,
// however it goes: an exception included. A watchdog left running would, at
// its next deadline or a kill(), cancel sockets that no longer exist.
class WatchdogStop {
public:
    explicit WatchdogStop(std::shared_ptr<Watchdog> watchdog) : watchdog_(std::move(watchdog)) {}
    WatchdogStop(const WatchdogStop&) = delete;
    WatchdogStop& operator=(const WatchdogStop&) = delete;
    ~WatchdogStop() { watchdog_->stop(); }

private:
    std::shared_ptr<Watchdog> watchdog_;
};

}  // namespace vaultgate::net
