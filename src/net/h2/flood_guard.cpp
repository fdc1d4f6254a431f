#include "net/h2/flood_guard.hpp"

#include <algorithm>

namespace vaultgate::net::h2 {

bool FloodGuard::exceeded(Flood kind, clock::time_point now) {
    const bool reset = kind == Flood::reset;
    const double burst = reset ? limits_.reset_burst : limits_.burst;
    const double rate = reset ? limits_.reset_per_second : limits_.per_second;
    Bucket& b = buckets_[static_cast<int>(kind)];
    if (b.last != clock::time_point{}) {
        const double seconds = std::chrono::duration<double>(now - b.last).count();
        b.level = std::max(0.0, b.level - seconds * rate);
    }
    b.last = now;
    b.level += 1;
    return b.level > burst;
}

std::string_view FloodGuard::name(Flood kind) {
    switch (kind) {
        case Flood::settings:
            return "settings_flood";
        case Flood::ping:
            return "ping_flood";
        case Flood::priority:
            return "priority_flood";
        case Flood::empty_data:
            return "empty_data_flood";
        case Flood::reset:
            return "rapid_reset";
        case Flood::continuation:
            return "continuation_flood";
        default:
            return "flood";
    }
}

}  // namespace vaultgate::net::h2
