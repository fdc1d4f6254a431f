#include "vaultgate/observe/warn_limiter.hpp"

#include "vaultgate/observe/diag_log.hpp"

namespace vaultgate {

void WarnLimiter::forget_old(clock::time_point now) {
    for (auto it = slots_.begin(); it != slots_.end();) {
        // A slot still holding back lines keeps them until its next line reports them.
        if (now - it->second.last >= interval_ && it->second.held_back == 0)
            it = slots_.erase(it);
        else
            ++it;
    }
}

std::optional<std::string> WarnLimiter::admit(const std::string& key, std::string_view message, clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto it = slots_.find(key);
    if (it != slots_.end() && now - it->second.last < interval_) {
        ++it->second.held_back;
        return std::nullopt;
    }
    std::string line(message);
    if (it != slots_.end() && it->second.held_back > 0)
        line += " (" + std::to_string(it->second.held_back) + " more since the last such line)";
    if (it == slots_.end()) {
        if (slots_.size() >= max_keys_) forget_old(now);
        if (slots_.size() >= max_keys_) return line;  // not remembered: never held back
        it = slots_.emplace(key, Slot{}).first;
    }
    it->second.last = now;
    it->second.held_back = 0;
    return line;
}

void WarnLimiter::warn(const std::string& key, std::string_view message) {
    if (auto line = admit(key, message, clock::now())) log_warn(*line);
}

}  // namespace vaultgate
