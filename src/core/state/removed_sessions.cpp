#include "vaultgate/state/removed_sessions.hpp"

#include <algorithm>

namespace vaultgate {

void RemovedSessions::remember(const std::string& id, SessionRemoval how) {
    auto [it, added] = removed_.insert_or_assign(id, how);
    if (!added) return;
    order_.push_back(id);
    if (order_.size() <= capacity) return;
    removed_.erase(order_.front());
    order_.pop_front();
}

void RemovedSessions::note(const GatewayState& before, const GatewayState& after,
                           std::chrono::system_clock::time_point now) {
    std::lock_guard lock(mutex_);
    // Shards the two snapshots share hold the same sessions: only the ones a
    // change copied are compared, so a change costs what it touched.
    using Table = ShardedTable<Session>;
    for (std::size_t i = 0; i < Table::shard_count; ++i) {
        if (before.sessions.same_shard(after.sessions, i)) continue;
        if (const auto* shard = before.sessions.shard(i))
            for (const auto& [id, session] : *shard) {
                if (session.token_digest.empty() || after.sessions.count(id)) continue;
                remember(id, session.expired_at(now) ? SessionRemoval::expired : SessionRemoval::revoked);
            }
        // An id back in the state (a reload that restores it) is live again.
        if (removed_.empty()) continue;
        if (const auto* shard = after.sessions.shard(i))
            for (const auto& [id, session] : *shard) {
                if (removed_.erase(id) == 0) continue;
                order_.erase(std::find(order_.begin(), order_.end(), id));
            }
    }
}

std::optional<SessionRemoval> RemovedSessions::find(std::string_view id) const {
    std::lock_guard lock(mutex_);
    auto it = removed_.find(std::string(id));
    if (it == removed_.end()) return std::nullopt;
    return it->second;
}

}  // namespace vaultgate
