#include "vaultgate/trim_schedule.hpp"

namespace vaultgate {

bool TrimSchedule::due(std::uint64_t connections_opened, std::uint64_t connections_active, std::uint64_t requests) {
    if (connections_opened != opened_ || connections_active != active_ || requests != requests_) {
        opened_ = connections_opened;
        active_ = connections_active;
        requests_ = requests;
        quiet_ticks_ = 0;
        return true;
    }
    if (quiet_ticks_ >= settle_ticks) return false;
    ++quiet_ticks_;
    return true;
}

}  // namespace vaultgate
