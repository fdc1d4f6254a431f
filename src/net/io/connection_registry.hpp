#pragma once
// Live client connections, by session, so that deleting or expiring a session
// closes its connections, and a drain can close idle ones. Connections live on
// different threads: the registry only holds weak references and asks each
// connection's own executor to end it.
#include "net/io/watchdog.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vaultgate::net {

class ConnectionRegistry {
public:
    void add(const std::string& session_id, const std::shared_ptr<Watchdog>& connection);
    void remove(const std::string& session_id, const std::shared_ptr<Watchdog>& connection);
    // Ends every connection of the session; returns how many were asked to end.
    std::size_t close_session(const std::string& session_id);
    // Ends connections that sit idle between requests (used when draining).
    void close_idle();
    std::size_t size() const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::vector<std::weak_ptr<Watchdog>>> by_session_;
};

}  // namespace vaultgate::net
