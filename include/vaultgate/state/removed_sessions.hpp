#pragma once
// Sessions that recently left the published state, so that a 407 for one of
// them can say in the access log whether it was revoked or expired rather
// than never known. Only sessions with a token (made through the admin API)
// can be named by a client, so only those are remembered, the most recent
// `capacity` of them.
#include "vaultgate/state/gateway_state.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vaultgate {

enum class SessionRemoval {
    revoked,  // deleted through the admin API, or dropped by a reload
    expired,  // its TTL ran out
};

class RemovedSessions {
public:
    static constexpr std::size_t capacity = 1024;

    // Remembers the token sessions of `before` that `after` no longer has:
    // expired when their TTL had run out at `now`, else revoked. A session
    // that `after` has again is forgotten.
    void note(const GatewayState& before, const GatewayState& after, std::chrono::system_clock::time_point now);

    std::optional<SessionRemoval> find(std::string_view id) const;

private:
    void remember(const std::string& id, SessionRemoval how);

    mutable std::mutex mutex_;
    std::deque<std::string> order_;  // oldest first, at most `capacity`
    std::unordered_map<std::string, SessionRemoval> removed_;
};

}  // namespace vaultgate
