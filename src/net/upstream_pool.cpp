#include "upstream_pool.hpp"

#include <sys/socket.h>

#include <algorithm>

namespace vaultgate::net {

std::string UpstreamPool::key(const std::string& session, const std::string& host, std::uint16_t port) {
    std::string k;
    k.reserve(session.size() + host.size() + 8);
    k.append(session).push_back('\n');  // session ids never contain a newline
    k.append(host).push_back(':');
    k.append(std::to_string(port));
    return k;
}

bool UpstreamPool::usable(tls_stream& stream) {
    // An idle connection has nothing to read: readable means the origin closed
    // it (or sent something unasked), and either way it cannot be reused.
    if (SSL_has_pending(stream.native_handle())) return false;
    char probe;
    ssize_t n = ::recv(stream.next_layer().native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

UpstreamPool::~UpstreamPool() {
    // The streams close with the map; their descriptors leave the budget.
    dropped(total_);
}

void UpstreamPool::configure(ConnectionLimiter* limiter, clock::duration max_idle) {
    limiter_ = limiter;
    max_idle_ = max_idle;
}

void UpstreamPool::dropped(std::size_t count) {
    total_ -= count;
    if (limiter_ && count > 0) limiter_->release_pooled(count);
}

void UpstreamPool::evict_expired() {
    auto now = clock::now();
    for (auto it = idle_.begin(); it != idle_.end();) {
        auto& list = it->second;  // oldest first
        auto before = list.size();
        std::erase_if(list, [&](Idle& i) { return now - i.since > max_idle_; });
        // Beyond max_per_key, the oldest of those that are no longer just
        // handed back go; the newest stay (clients about to take them back).
        std::size_t excess = 0;
        while (list.size() - excess > max_per_key && now - list[excess].since > buffer_linger) ++excess;
        list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(excess));
        for (auto& i : list) {
            if (!i.buffers_released && now - i.since > buffer_linger) {
                i.stream.release_buffers();
                i.buffers_released = true;
            }
        }
        dropped(before - list.size());
        it = list.empty() ? idle_.erase(it) : std::next(it);
    }
}

void UpstreamPool::clear() {
    const std::size_t count = total_;
    idle_.clear();
    dropped(count);
}

std::optional<tls_stream> UpstreamPool::take(const std::string& key) {
    auto it = idle_.find(key);
    if (it == idle_.end()) return std::nullopt;
    // Newest first: the connection this client just handed back, most often.
    // An emptied list stays for the next give (the sweep removes it).
    auto now = clock::now();
    auto& list = it->second;
    while (!list.empty()) {
        Idle idle = std::move(list.back());
        list.pop_back();
        dropped(1);
        if (now - idle.since <= max_idle_ && usable(idle.stream)) return std::move(idle.stream);
    }
    return std::nullopt;
}

void UpstreamPool::give(const std::string& key, tls_stream stream) {
    // Expired connections, and those past max_per_key, are closed by the
    // sweep (sweep_upstream_pool), not here: every client between two
    // requests hands its connection back, and must find it again.
    if (!limiter_) return;  // not configured: closed as it goes out of scope
    if (total_ >= max_total || !limiter_->try_hold_pooled()) return;
    auto it = idle_.find(key);
    if (it == idle_.end()) it = idle_.emplace(key, std::vector<Idle>{}).first;
    it->second.push_back(Idle{std::move(stream), clock::now()});
    ++total_;
}

UpstreamPool& this_thread_upstream_pool() {
    thread_local UpstreamPool pool;
    return pool;
}

awaitable<void> sweep_upstream_pool(ConnectionLimiter* limiter, clock::duration max_idle) {
    UpstreamPool& pool = this_thread_upstream_pool();
    pool.configure(limiter, max_idle);
    // A connection is closed at most a tenth of its timeout (at least 100 ms)
    // after it expired, and its buffers are freed at most one buffer_linger
    // after it waited that long.
    const clock::duration period = std::clamp<clock::duration>(max_idle / 10, std::chrono::milliseconds(100),
                                                               UpstreamPool::buffer_linger);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;) {
        timer.expires_after(period);
        auto [ec] = co_await timer.async_wait(use_tuple);
        if (ec) co_return;
        pool.evict_expired();
    }
}

}  // namespace vaultgate::net
