#include "connection_limiter.hpp"

#include <sys/resource.h>

namespace vaultgate::net {

namespace {

// Each proxied connection holds up to two descriptors (client and upstream);
// keep a reserve for listeners, logs, the store and resolver sockets.
constexpr std::size_t descriptors_per_connection = 2;
constexpr std::size_t reserved_descriptors = 64;

std::size_t connections_within_fd_limit() {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    auto fds = static_cast<std::size_t>(lim.rlim_cur);
    return fds > reserved_descriptors ? (fds - reserved_descriptors) / descriptors_per_connection : 0;
}

}  // namespace

ConnectionLimiter::ConnectionLimiter(std::size_t max_total, std::size_t max_per_client)
    : max_total_(max_total), max_per_client_(max_per_client), fd_budget_(connections_within_fd_limit()) {}

Admission ConnectionLimiter::try_admit(const std::string& client_ip) {
    std::lock_guard lock(mutex_);
    if (total_ >= max_total_) return Admission::total_cap;
    if (total_ >= fd_budget_) return Admission::descriptors;
    auto& mine = per_client_[client_ip];
    if (mine >= max_per_client_) {
        if (mine == 0) per_client_.erase(client_ip);
        return Admission::per_client_cap;
    }
    ++mine;
    ++total_;
    return Admission::admitted;
}

void ConnectionLimiter::release(const std::string& client_ip) {
    std::lock_guard lock(mutex_);
    auto it = per_client_.find(client_ip);
    if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
    if (total_ > 0 && --total_ == 0) idle_cv_.notify_all();
}

std::size_t ConnectionLimiter::active() const {
    std::lock_guard lock(mutex_);
    return total_;
}

}  // namespace vaultgate::net
