#pragma once
// Admission of new client connections: a total cap, a per-client-address cap
// (so one sandbox cannot take every slot), and a descriptor guard that refuses
// new connections before the process runs out of file descriptors. Pooled
// upstream connections hold descriptors too, so the guard counts them.
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace vaultgate::net {

enum class Admission { admitted, total_cap, per_client_cap, descriptors };

class ConnectionLimiter {
public:
    // descriptor_capacity: descriptors connections may use; by default the
    // RLIMIT_NOFILE soft limit less a reserve for listeners, logs and the store.
    ConnectionLimiter(std::size_t max_total, std::size_t max_per_client,
                      std::optional<std::size_t> descriptor_capacity = std::nullopt);

    // New caps (a reload): they judge the next admissions; connections
    // already admitted stay, even above them.
    void set_caps(std::size_t max_total, std::size_t max_per_client);
    Admission try_admit(const std::string& client_ip);
    void release(const std::string& client_ip);
    std::size_t active() const;

    // A pooled upstream connection's descriptor. Refused when the pool already
    // holds a quarter of the capacity, or the descriptor is not free: clients
    // come first, and a pooled connection is only a saving (the server empties
    // the pools when a client is refused for descriptors while some are held).
    // The count is conservative: an upstream parked by a client that is still
    // connected is counted both in that client's two and here.
    bool try_hold_pooled();
    void release_pooled(std::size_t count = 1);
    std::size_t pooled() const;
    // Blocks until no connection is left or the deadline passes.
    template <class TimePoint>
    bool wait_idle_until(TimePoint deadline) {
        std::unique_lock lock(mutex_);
        return idle_cv_.wait_until(lock, deadline, [this] { return total_ == 0; });
    }

private:
    std::size_t max_total_;
    std::size_t max_per_client_;
    std::size_t descriptor_capacity_;
    mutable std::mutex mutex_;
    std::condition_variable idle_cv_;
    std::size_t total_ = 0;
    std::size_t pooled_ = 0;
    std::map<std::string, std::size_t> per_client_;
};

}  // namespace vaultgate::net
