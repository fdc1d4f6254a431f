#include "net/upstream/upstream_pool.hpp"

#include "vaultgate/mem/block_cache.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>

namespace vaultgate::net {

std::string UpstreamPool::key(const std::string& session, const std::string& host, std::uint16_t port,
                              std::uint64_t settings_generation) {
    std::string k;
    k.reserve(session.size() + host.size() + 16);
    k.append(session).push_back('\n');  // session ids never contain a newline
    k.append(host).push_back(':');
    k.append(std::to_string(port)).push_back('#');
    k.append(std::to_string(settings_generation));
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

namespace {
std::atomic<std::size_t> connections_in_all_pools{0};
}  // namespace

std::size_t UpstreamPool::total_in_all_pools() noexcept { return connections_in_all_pools.load(); }

UpstreamPool::~UpstreamPool() {
    // The streams close with the map; their descriptors leave the budget.
    dropped(total_);
    if (limiter_ && held_ > 0) limiter_->release_pooled(held_);
}

void UpstreamPool::configure(ConnectionLimiter* limiter, clock::duration max_idle) {
    limiter_ = limiter;
    max_idle_ = max_idle;
}

void UpstreamPool::dropped(std::size_t count) {
    total_ -= count;
    connections_in_all_pools.fetch_sub(count, std::memory_order_relaxed);
}

void UpstreamPool::close_oldest() {
    auto oldest = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
        if (!it->second.empty() && (oldest == idle_.end() || it->second.front().since < oldest->second.front().since))
            oldest = it;
    if (oldest == idle_.end()) return;
    oldest->second.erase(oldest->second.begin());
    if (oldest->second.empty()) idle_.erase(oldest);
    dropped(1);
}

void UpstreamPool::balance() {
    for (;;) {
        std::size_t need = total_ > lenders_ ? total_ - lenders_ : 0;
        if (held_ > need) {
            limiter_->release_pooled(held_ - need);
            held_ = need;
        }
        if (held_ == need) return;
        if (need <= max_total && limiter_->try_hold_pooled()) {
            ++held_;
            continue;
        }
        close_oldest();
    }
}

void UpstreamPool::end_lending() {
    if (lenders_ == 0) return;
    --lenders_;
    if (limiter_) balance();
}

void UpstreamPool::evict_expired() {
    // What expires or sheds its buffers here has waited a linger at least.
    block_cache::FreeDirectly not_for_new_connections;
    auto now = clock::now();
    std::size_t before = total_;
    std::size_t kept = 0;
    for (auto it = idle_.begin(); it != idle_.end();) {
        auto& list = it->second;
        std::erase_if(list, [&](Idle& i) { return now - i.since > max_idle_; });
        // Beyond max_per_key, the oldest of those that waited `linger` go; the
        // newest stay (clients about to take them back).
        std::size_t excess = 0;
        while (list.size() - excess > max_per_key && now - list[excess].since > linger) ++excess;
        list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(excess));
        for (auto& i : list) {
            if (!i.buffers_released && now - i.since > linger) {
                i.stream.release_buffers();
                i.buffers_released = true;
            }
        }
        kept += list.size();
        it = list.empty() ? idle_.erase(it) : std::next(it);
    }
    dropped(before - kept);
    while (total_ > max_total) close_oldest();
    if (limiter_) balance();
}

void UpstreamPool::clear() {
    while (total_ > lenders_) close_oldest();
    if (limiter_) balance();
}

std::optional<tls_stream> UpstreamPool::take(const std::string& key) {
    auto it = idle_.find(key);
    if (it == idle_.end()) return std::nullopt;
    // Newest first: the connection this client handed back, most often. An
    // emptied list stays for the next give (the sweep removes it).
    auto now = clock::now();
    auto& list = it->second;
    std::optional<tls_stream> found;
    while (!list.empty() && !found) {
        Idle idle = std::move(list.back());
        list.pop_back();
        dropped(1);
        if (now - idle.since <= max_idle_ && usable(idle.stream)) found.emplace(std::move(idle.stream));
    }
    if (limiter_) balance();
    return found;
}

void UpstreamPool::give(const std::string& key, tls_stream stream, bool lender) {
    if (!limiter_) return;  // not configured: closed as it goes out of scope
    auto it = idle_.find(key);
    if (it == idle_.end()) it = idle_.emplace(key, std::vector<Idle>{}).first;
    it->second.push_back(Idle{std::move(stream), clock::now()});
    ++total_;
    connections_in_all_pools.fetch_add(1, std::memory_order_relaxed);
    if (lender) ++lenders_;
    balance();
    if (total_ == 1 && wake_) wake_->cancel();  // the sweep slept on an empty pool
}

UpstreamPool& this_thread_upstream_pool() {
    thread_local UpstreamPool pool;
    return pool;
}

awaitable<void> sweep_upstream_pool(ConnectionLimiter* limiter, clock::duration max_idle) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    UpstreamPool& pool = this_thread_upstream_pool();
    pool.configure(limiter, max_idle);
    // The timer lives as long as this frame, which goes only when the
    // io_context does, after its thread (and with it the pool) ended.
    pool.set_wake(&timer);
    // A connection is closed at most a tenth of its timeout (at least 100 ms)
    // after it expired, and its buffers are freed at most half a linger after
    // it waited a linger. With nothing pooled, the sweep sleeps until give().
    const clock::duration period =
        std::clamp<clock::duration>(max_idle / 10, std::chrono::milliseconds(100), UpstreamPool::linger / 2);
    for (;;) {
        if (pool.size() > 0)
            timer.expires_after(period);
        else
            timer.expires_at(clock::time_point::max());
        co_await timer.async_wait(use_tuple);  // cancelled: woken by give()
        pool.evict_expired();
    }
}

}  // namespace vaultgate::net
