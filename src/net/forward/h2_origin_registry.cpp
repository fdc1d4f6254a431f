#include "net/forward/h2_origin_registry.hpp"

namespace vaultgate::net {

namespace {

// Past this many remembered HTTP/1.1 keys the memory is cleared (a key only
// costs a wait for a dial once more).
constexpr std::size_t max_http11_keys = 4096;

}  // namespace

std::shared_ptr<H2OriginConnection> H2OriginRegistry::find(const std::string& key) {
    auto it = open_.find(key);
    if (it == open_.end()) return nullptr;
    auto conn = it->second.lock();
    if (conn && conn->accepts_streams()) return conn;
    open_.erase(it);
    return nullptr;
}

void H2OriginRegistry::add(const std::string& key, const std::shared_ptr<H2OriginConnection>& conn) {
    // Expired entries of other keys go with each new one.
    std::erase_if(open_, [](const auto& entry) { return entry.second.expired(); });
    open_[key] = conn;
}

bool H2OriginRegistry::begin_dial(const std::string& key) {
    if (http11_.count(key)) return true;
    auto [it, inserted] = dials_.try_emplace(key);
    if (!inserted) return false;
    it->second = nullptr;  // a timer only once someone waits
    return true;
}

void H2OriginRegistry::end_dial(const std::string& key, bool chose_h2) {
    if (chose_h2) {
        http11_.erase(key);
    } else {
        if (http11_.size() >= max_http11_keys) http11_.clear();
        http11_.insert(key);
    }
    auto it = dials_.find(key);
    if (it == dials_.end()) return;
    if (it->second) it->second->cancel();
    dials_.erase(it);
}

awaitable<void> H2OriginRegistry::wait_for_dial(const std::string& key, clock::duration timeout) {
    auto it = dials_.find(key);
    if (it == dials_.end()) co_return;
    // One timer for every waiter: the dial ends with a cancel; past the
    // timeout (the dial's own, as the first waiter saw it) the waiters dial themselves.
    if (!it->second) {
        it->second = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
        it->second->expires_after(timeout);
    }
    std::shared_ptr<asio::steady_timer> timer = it->second;
    co_await timer->async_wait(use_tuple);
}

H2OriginRegistry& this_thread_h2_origins() {
    thread_local H2OriginRegistry registry;
    return registry;
}

}  // namespace vaultgate::net
