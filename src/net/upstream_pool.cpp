#include "upstream_pool.hpp"

#include <sys/socket.h>

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

void UpstreamPool::evict_expired() {
    auto now = clock::now();
    for (auto it = idle_.begin(); it != idle_.end();) {
        auto& list = it->second;
        auto before = list.size();
        std::erase_if(list, [&](Idle& i) { return now - i.since > max_idle; });
        total_ -= before - list.size();
        it = list.empty() ? idle_.erase(it) : std::next(it);
    }
}

std::optional<tls_stream> UpstreamPool::take(const std::string& key) {
    auto it = idle_.find(key);
    if (it == idle_.end()) return std::nullopt;
    auto now = clock::now();
    while (!it->second.empty()) {
        Idle idle = std::move(it->second.back());
        it->second.pop_back();
        --total_;
        if (now - idle.since <= max_idle && usable(idle.stream)) {
            if (it->second.empty()) idle_.erase(it);
            return std::move(idle.stream);
        }
    }
    idle_.erase(it);
    return std::nullopt;
}

void UpstreamPool::give(const std::string& key, tls_stream stream) {
    evict_expired();
    auto& list = idle_[key];
    if (list.size() >= max_per_key || total_ >= max_total) return;  // closed as it goes out of scope
    stream.release_buffers();
    list.push_back(Idle{std::move(stream), clock::now()});
    ++total_;
}

UpstreamPool& this_thread_upstream_pool() {
    thread_local UpstreamPool pool;
    return pool;
}

}  // namespace vaultgate::net
