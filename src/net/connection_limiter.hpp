#pragma once
// Admission of new client connections: a total cap, a per-client-address cap
// (so one sandbox cannot take every slot), and a descriptor guard that refuses
// new connections before the process runs out of file descriptors.
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace vaultgate::net {

enum class Admission { admitted, total_cap, per_client_cap, descriptors };

class ConnectionLimiter {
public:
    ConnectionLimiter(std::size_t max_total, std::size_t max_per_client);

    Admission try_admit(const std::string& client_ip);
    void release(const std::string& client_ip);
    std::size_t active() const;
    // Blocks until no connection is left or the deadline passes.
    template <class TimePoint>
    bool wait_idle_until(TimePoint deadline) {
        std::unique_lock lock(mutex_);
        return idle_cv_.wait_until(lock, deadline, [this] { return total_ == 0; });
    }

private:
    std::size_t max_total_;
    std::size_t max_per_client_;
    std::size_t fd_budget_;   // connections the descriptor limit leaves room for
    mutable std::mutex mutex_;
    std::condition_variable idle_cv_;
    std::size_t total_ = 0;
    std::map<std::string, std::size_t> per_client_;
};

}  // namespace vaultgate::net
