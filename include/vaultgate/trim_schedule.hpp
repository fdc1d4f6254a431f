#pragma once
// When to hand freed heap pages back to the system (malloc_trim). A trim walks
// and locks every malloc arena, so it runs only after activity (connections
// came or went, requests were served: handshakes, closed connections and
// bodies free the most), and on the next few ticks, while connections that
// went quiet shed their buffers and the pool closes idle upstreams. A gateway
// with nothing going on is left alone.
#include <cstdint>

namespace vaultgate {

class TrimSchedule {
public:
    // Called once per tick with the counters; true when a trim is due.
    bool due(std::uint64_t connections_opened, std::uint64_t connections_active, std::uint64_t requests);

    // Ticks after the last change that still trim: idle connections release
    // their buffers 500 ms after their last byte.
    static constexpr int settle_ticks = 2;

private:
    std::uint64_t opened_ = 0;
    std::uint64_t active_ = 0;
    std::uint64_t requests_ = 0;
    int quiet_ticks_ = settle_ticks;
};

}  // namespace vaultgate
