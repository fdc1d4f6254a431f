#include "net/io/connection_registry.hpp"

namespace vaultgate::net {

void ConnectionRegistry::add(const std::string& session_id, const std::shared_ptr<Watchdog>& connection) {
    std::lock_guard lock(mutex_);
    auto& list = by_session_[session_id];
    std::erase_if(list, [](const std::weak_ptr<Watchdog>& w) { return w.expired(); });
    list.push_back(connection);
}

void ConnectionRegistry::remove(const std::string& session_id, const std::shared_ptr<Watchdog>& connection) {
    std::lock_guard lock(mutex_);
    auto it = by_session_.find(session_id);
    if (it == by_session_.end()) return;
    std::erase_if(it->second, [&](const std::weak_ptr<Watchdog>& w) {
        auto p = w.lock();
        return !p || p == connection;
    });
    if (it->second.empty()) by_session_.erase(it);
}

std::size_t ConnectionRegistry::close_session(const std::string& session_id) {
    std::vector<std::shared_ptr<Watchdog>> live;
    {
        std::lock_guard lock(mutex_);
        auto it = by_session_.find(session_id);
        if (it == by_session_.end()) return 0;
        for (auto& w : it->second)
            if (auto p = w.lock()) live.push_back(std::move(p));
    }
    for (auto& wd : live) asio::post(wd->executor(), [wd] { wd->kill(); });
    return live.size();
}

void ConnectionRegistry::close_idle() {
    std::vector<std::shared_ptr<Watchdog>> live;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, list] : by_session_)
            for (auto& w : list)
                if (auto p = w.lock()) live.push_back(std::move(p));
    }
    // idle() is read on the connection's own thread, where it is written.
    for (auto& wd : live)
        asio::post(wd->executor(), [wd] {
            if (wd->idle()) wd->kill();
        });
}

std::size_t ConnectionRegistry::size() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [id, list] : by_session_) n += list.size();
    return n;
}

}  // namespace vaultgate::net
