#pragma once
// Warnings that may come once per request (an origin that is down, a name
// that does not resolve) are held to one line per key per interval; the ones
// held back are counted and reported by the next line that passes, so a flood
// of failures cannot drown the diagnostic log.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vaultgate {

class WarnLimiter {
public:
    using clock = std::chrono::steady_clock;

    // At most `max_keys` keys are remembered; when full, the keys whose
    // interval is over are forgotten, and if none is, the new key's line passes.
    explicit WarnLimiter(clock::duration interval, std::size_t max_keys = 4096)
        : interval_(interval), max_keys_(max_keys) {}

    // The line to write for `message` under `key` at `now` ("message (N more
    // since the last)" when some were held back), or nullopt when held back.
    std::optional<std::string> admit(const std::string& key, std::string_view message, clock::time_point now);

    // admit() at the current time, written as a warn line when it passes.
    void warn(const std::string& key, std::string_view message);

private:
    struct Slot {
        clock::time_point last;
        std::size_t held_back = 0;
    };
    void forget_old(clock::time_point now);

    clock::duration interval_;
    std::size_t max_keys_;
    std::mutex mutex_;
    std::unordered_map<std::string, Slot> slots_;
};

}  // namespace vaultgate
