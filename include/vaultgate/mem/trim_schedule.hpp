#pragma once
// When to hand freed heap pages back to the system (malloc_trim). A trim walks
// and locks every malloc arena, and only memory freed since the last one can
// have left pages to give back, so it runs only on a tick after something was
// freed: a connection closed, a request finished (its head and body buffers),
// or the block cache freed blocks (buffers shed by connections that went
// quiet, pooled upstream connections the sweep closed). Connections that only
// opened, or a gateway with nothing going on, are left alone.
#include <cstdint>

namespace vaultgate {

// Monotonic counts, each of events that free memory.
struct FreeCounts {
    std::uint64_t connections_closed = 0;
    std::uint64_t requests = 0;
    std::uint64_t blocks_freed = 0;

    bool operator==(const FreeCounts&) const = default;
};

class TrimSchedule {
public:
    // Called once per tick with the counts; true when a trim is due, that is
    // when anything was freed since the last trim.
    bool due(const FreeCounts& now);

private:
    FreeCounts at_last_trim_;
};

}  // namespace vaultgate
