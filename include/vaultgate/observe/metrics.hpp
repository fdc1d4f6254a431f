#pragma once
// Counters for GET /metrics (Prometheus text format 0.0.4). Recording runs once
// or twice per request on the I/O threads, so it is cheap: relaxed atomics for
// fixed series (requests by ingress and status class included); a mutex, with
// no allocation once a series exists, only for series labelled by names
// (vault/service, deny reasons), whose label sets are bounded by the config.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace vaultgate {

// Counters and gauges kept by other parts (the leaf cache, the access log,
// the upstream pool), rendered with the proxy's own.
struct MetricsExtras {
    std::uint64_t cert_cache_hits = 0;
    std::uint64_t cert_cache_misses = 0;
    std::uint64_t access_log_dropped_lines = 0;  // not written: over the backlog cap, or a failed write
    std::uint64_t upstream_pooled_connections = 0;
    std::uint64_t block_cache_bytes = 0;  // large blocks the I/O threads keep for new connections
};

// What a request for a minted token led to (counted per vault and service).
enum class TokenEvent {
    fetch,      // a request to the token endpoint
    failure,    // a fetch that gave no token
    cache_hit,  // a cached token served
    wait,       // a request that waited for a fetch another one had started
};

class Metrics {
public:
    void connection_opened() {
        connections_total_.fetch_add(1, std::memory_order_relaxed);
        active_connections_.fetch_add(1, std::memory_order_relaxed);
    }
    void connection_closed() { active_connections_.fetch_sub(1, std::memory_order_relaxed); }
    void connection_refused() { connections_refused_.fetch_add(1, std::memory_order_relaxed); }
    // One look at the unread bytes of a client's ClientHello (transparent mode, checked tunnels).
    void client_hello_peek() { client_hello_peeks_.fetch_add(1, std::memory_order_relaxed); }
    std::uint64_t client_hello_peeks() const { return client_hello_peeks_.load(std::memory_order_relaxed); }

    // ingress: mitm | tunnel | http | denied; status 0 = no response
    void request(std::string_view ingress, int status);
    // A request inside an intercepted or plain-HTTP connection, by the client's
    // HTTP version ("h1", "h2"; anything else is not counted).
    void proto_request(std::string_view proto);
    std::uint64_t proto_requests(std::string_view proto) const;
    void injection(std::string_view vault, std::string_view service);
    void denial(std::string_view reason);
    void token_event(std::string_view vault, std::string_view service, TokenEvent event);
    std::uint64_t token_events(std::string_view vault, std::string_view service, TokenEvent event) const;
    void upstream_latency(std::chrono::duration<double> seconds);

    // Rendered with the counters other parts own, passed in.
    std::string render(const MetricsExtras& extras) const;

    std::uint64_t active_connections() const { return active_connections_.load(std::memory_order_relaxed); }
    std::uint64_t connections_total() const { return connections_total_.load(std::memory_order_relaxed); }
    // Requests of the common ingress/status classes (the rare others aside).
    std::uint64_t requests_total() const;

private:
    std::atomic<std::uint64_t> connections_total_{0};
    std::atomic<std::int64_t> active_connections_{0};
    std::atomic<std::uint64_t> connections_refused_{0};
    std::atomic<std::uint64_t> client_hello_peeks_{0};

    // Finds a (vault, service) series without building a key string.
    struct NamePairLess {
        using is_transparent = void;
        template <class A, class B>
        bool operator()(const A& a, const B& b) const {
            return std::pair<std::string_view, std::string_view>(a.first, a.second) <
                   std::pair<std::string_view, std::string_view>(b.first, b.second);
        }
    };

    static constexpr std::array<std::string_view, 4> known_ingresses_{"mitm", "tunnel", "http", "denied"};
    static constexpr std::array<std::string_view, 6> status_classes_{"none", "1xx", "2xx", "3xx", "4xx", "5xx"};
    std::array<std::array<std::atomic<std::uint64_t>, 6>, 4> requests_{};
    static constexpr std::array<std::string_view, 2> known_protos_{"h1", "h2"};
    std::array<std::atomic<std::uint64_t>, 2> proto_requests_{};

    mutable std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> other_requests_;  // an ingress not listed above
    std::map<std::pair<std::string, std::string>, std::uint64_t, NamePairLess> injections_;  // (vault, service)
    std::map<std::string, std::uint64_t, std::less<>> denials_;
    // (vault, service) -> a count per TokenEvent
    std::map<std::pair<std::string, std::string>, std::array<std::uint64_t, 4>, NamePairLess> tokens_;

    // Upstream latency histogram (seconds); bucket bounds fixed at compile time.
    static constexpr std::array<double, 12> latency_bounds_{0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                                            0.5,   1.0,  2.5,   5.0,  10.0, 30.0};
    std::array<std::atomic<std::uint64_t>, 13> latency_buckets_{};  // last = +Inf
    std::atomic<std::uint64_t> latency_count_{0};
    std::atomic<std::uint64_t> latency_sum_micros_{0};
};

}  // namespace vaultgate
