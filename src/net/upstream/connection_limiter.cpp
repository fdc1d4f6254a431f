#include "net/upstream/connection_limiter.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace vaultgate::net {

namespace {

// Each proxied connection holds up to two descriptors (client and upstream);
// keep a reserve for listeners, logs, the store and resolver sockets.
constexpr std::size_t descriptors_per_connection = 2;
constexpr std::size_t reserved_descriptors = 64;

std::size_t descriptors_within_limit() {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return SIZE_MAX / 2;
    auto fds = static_cast<std::size_t>(lim.rlim_cur);
    return fds > reserved_descriptors ? fds - reserved_descriptors : 0;
}

}  // namespace

ConnectionLimiter::ConnectionLimiter(std::size_t max_total, std::size_t max_per_client,
                                     std::optional<std::size_t> descriptor_capacity)
    : max_total_(max_total),
      max_per_client_(max_per_client),
      descriptor_capacity_(descriptor_capacity.value_or(descriptors_within_limit())) {}

void ConnectionLimiter::set_caps(std::size_t max_total, std::size_t max_per_client) {
    std::lock_guard lock(mutex_);
    max_total_ = max_total;
    max_per_client_ = max_per_client;
}

Admission ConnectionLimiter::try_admit(const std::string& client_ip) {
    std::lock_guard lock(mutex_);
    if (total_ >= max_total_) return Admission::total_cap;
    if ((total_ + 1) * descriptors_per_connection + pooled_ > descriptor_capacity_) return Admission::descriptors;
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

bool ConnectionLimiter::try_hold_pooled() {
    std::lock_guard lock(mutex_);
    if (pooled_ + 1 > descriptor_capacity_ / 4) return false;
    if (total_ * descriptors_per_connection + pooled_ + 1 > descriptor_capacity_) return false;
    ++pooled_;
    return true;
}

void ConnectionLimiter::release_pooled(std::size_t count) {
    std::lock_guard lock(mutex_);
    pooled_ -= std::min(count, pooled_);
}

std::size_t ConnectionLimiter::pooled() const {
    std::lock_guard lock(mutex_);
    return pooled_;
}

}  // namespace vaultgate::net
