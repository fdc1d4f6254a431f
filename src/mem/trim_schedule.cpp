#include "vaultgate/mem/trim_schedule.hpp"

namespace vaultgate {

bool TrimSchedule::due(const FreeCounts& now) {
    if (now == at_last_trim_) return false;
    at_last_trim_ = now;
    return true;
}

}  // namespace vaultgate
