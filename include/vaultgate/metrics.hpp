#pragma once
// Counters for GET /metrics (Prometheus text format 0.0.4). Recording is cheap
// (relaxed atomics for fixed series; a mutex only for labelled series, whose
// label sets are bounded: vault/service names, reasons, status classes).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace vaultgate {

class Metrics {
public:
    void connection_opened() { connections_total_.fetch_add(1, std::memory_order_relaxed); active_connections_.fetch_add(1, std::memory_order_relaxed); }
    void connection_closed() { active_connections_.fetch_sub(1, std::memory_order_relaxed); }
    void connection_refused() { connections_refused_.fetch_add(1, std::memory_order_relaxed); }

    // ingress: mitm | tunnel | http | denied; status 0 = no response
    void request(std::string_view ingress, int status);
    void injection(std::string_view vault, std::string_view service);
    void denial(std::string_view reason);
    void upstream_latency(std::chrono::duration<double> seconds);

    // Rendered with the leaf cache counters passed in (the cache owns them).
    std::string render(std::uint64_t cert_cache_hits, std::uint64_t cert_cache_misses) const;

    std::uint64_t active_connections() const { return active_connections_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> connections_total_{0};
    std::atomic<std::int64_t> active_connections_{0};
    std::atomic<std::uint64_t> connections_refused_{0};

    mutable std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> requests_;   // (ingress, "2xx")
    std::map<std::pair<std::string, std::string>, std::uint64_t> injections_; // (vault, service)
    std::map<std::string, std::uint64_t> denials_;

    // Upstream latency histogram (seconds); bucket bounds fixed at compile time.
    static constexpr std::array<double, 12> latency_bounds_{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                            0.5,   1.0,  2.5,   5.0,  10.0, 30.0};
    std::array<std::atomic<std::uint64_t>, 13> latency_buckets_{};  // last = +Inf
    std::atomic<std::uint64_t> latency_count_{0};
    std::atomic<std::uint64_t> latency_sum_micros_{0};
};

}  // namespace vaultgate
