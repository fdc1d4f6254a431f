#include "vaultgate/observe/metrics.hpp"

#include <cstdio>

namespace vaultgate {

namespace {

// Index into status_classes_: 0 = no response, 1..5 = 1xx..5xx.
std::size_t status_class_index(int status) {
    if (status < 100 || status > 599) return 0;
    return static_cast<std::size_t>(status / 100);
}

// Label values are names from config or the API; escape what the format requires.
std::string escape_label(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\' || c == '"') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    return out;
}

void line(std::string& out, std::string_view text) {
    out.append(text);
    out.push_back('\n');
}

}  // namespace

void Metrics::request(std::string_view ingress, int status) {
    const std::size_t cls = status_class_index(status);
    for (std::size_t i = 0; i < known_ingresses_.size(); ++i) {
        if (known_ingresses_[i] == ingress) {
            requests_[i][cls].fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    std::lock_guard lock(mutex_);
    ++other_requests_[{std::string(ingress), std::string(status_classes_[cls])}];
}

void Metrics::proto_request(std::string_view proto) {
    for (std::size_t i = 0; i < known_protos_.size(); ++i)
        if (known_protos_[i] == proto) proto_requests_[i].fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t Metrics::proto_requests(std::string_view proto) const {
    for (std::size_t i = 0; i < known_protos_.size(); ++i)
        if (known_protos_[i] == proto) return proto_requests_[i].load(std::memory_order_relaxed);
    return 0;
}

void Metrics::injection(std::string_view vault, std::string_view service) {
    const std::pair<std::string_view, std::string_view> key(vault, service);
    std::lock_guard lock(mutex_);
    auto it = injections_.find(key);
    if (it == injections_.end()) it = injections_.emplace(std::pair(std::string(vault), std::string(service)), 0).first;
    ++it->second;
}

void Metrics::denial(std::string_view reason) {
    std::lock_guard lock(mutex_);
    auto it = denials_.find(reason);
    if (it == denials_.end()) it = denials_.emplace(std::string(reason), 0).first;
    ++it->second;
}

void Metrics::token_event(std::string_view vault, std::string_view service, TokenEvent event) {
    const std::pair<std::string_view, std::string_view> key(vault, service);
    std::lock_guard lock(mutex_);
    auto it = tokens_.find(key);
    if (it == tokens_.end())
        it = tokens_.emplace(std::pair(std::string(vault), std::string(service)), std::array<std::uint64_t, 4>{}).first;
    ++it->second[static_cast<std::size_t>(event)];
}

std::uint64_t Metrics::token_events(std::string_view vault, std::string_view service, TokenEvent event) const {
    const std::pair<std::string_view, std::string_view> key(vault, service);
    std::lock_guard lock(mutex_);
    const auto it = tokens_.find(key);
    return it == tokens_.end() ? 0 : it->second[static_cast<std::size_t>(event)];
}

void Metrics::upstream_latency(std::chrono::duration<double> seconds) {
    double s = seconds.count();
    std::size_t i = 0;
    while (i < latency_bounds_.size() && s > latency_bounds_[i]) ++i;
    latency_buckets_[i].fetch_add(1, std::memory_order_relaxed);
    latency_count_.fetch_add(1, std::memory_order_relaxed);
    latency_sum_micros_.fetch_add(static_cast<std::uint64_t>(s * 1e6), std::memory_order_relaxed);
}

std::uint64_t Metrics::requests_total() const {
    std::uint64_t total = 0;
    for (const auto& by_class : requests_)
        for (const auto& count : by_class) total += count.load(std::memory_order_relaxed);
    return total;
}

std::string Metrics::render(const MetricsExtras& extras) const {
    std::string out;
    out.reserve(4096);
    char buf[256];
    auto counter = [&](const char* name, const char* help, std::uint64_t v) {
        std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s counter\n%s %llu", name, help, name, name,
                      static_cast<unsigned long long>(v));
        line(out, buf);
    };
    counter("vaultgate_connections_total", "Client connections accepted.", connections_total_.load());
    counter("vaultgate_connections_refused_total", "Client connections refused by a connection limit.",
            connections_refused_.load());
    counter("vaultgate_client_hello_peeks_total", "Looks at the unread bytes of a client's TLS ClientHello.",
            client_hello_peeks_.load());
    std::snprintf(buf, sizeof buf,
                  "# HELP vaultgate_connections_active Client connections open now.\n"
                  "# TYPE vaultgate_connections_active gauge\nvaultgate_connections_active %lld",
                  static_cast<long long>(active_connections_.load()));
    line(out, buf);
    counter("vaultgate_cert_cache_hits_total", "Leaf certificates served from the cache.", extras.cert_cache_hits);
    counter("vaultgate_cert_cache_misses_total", "Leaf certificates minted.", extras.cert_cache_misses);
    counter("vaultgate_access_log_dropped_lines_total",
            "Access-log lines not written: the backlog was over its cap, or a write failed.",
            extras.access_log_dropped_lines);
    std::snprintf(buf, sizeof buf,
                  "# HELP vaultgate_upstream_pooled_connections Idle upstream connections kept for reuse now.\n"
                  "# TYPE vaultgate_upstream_pooled_connections gauge\nvaultgate_upstream_pooled_connections %llu",
                  static_cast<unsigned long long>(extras.upstream_pooled_connections));
    line(out, buf);
    std::snprintf(buf, sizeof buf,
                  "# HELP vaultgate_block_cache_bytes Freed buffers the I/O threads keep for new connections now.\n"
                  "# TYPE vaultgate_block_cache_bytes gauge\nvaultgate_block_cache_bytes %llu",
                  static_cast<unsigned long long>(extras.block_cache_bytes));
    line(out, buf);

    {
        std::lock_guard lock(mutex_);
        line(out, "# HELP vaultgate_requests_total Requests and tunnels by ingress and status class.");
        line(out, "# TYPE vaultgate_requests_total counter");
        for (std::size_t i = 0; i < known_ingresses_.size(); ++i) {
            for (std::size_t cls = 0; cls < status_classes_.size(); ++cls) {
                const std::uint64_t v = requests_[i][cls].load(std::memory_order_relaxed);
                // Like a map of the series seen so far: a series appears once it has counted.
                if (v == 0) continue;
                line(out, "vaultgate_requests_total{ingress=\"" + std::string(known_ingresses_[i]) + "\",status=\"" +
                              std::string(status_classes_[cls]) + "\"} " + std::to_string(v));
            }
        }
        for (const auto& [k, v] : other_requests_)
            line(out, "vaultgate_requests_total{ingress=\"" + escape_label(k.first) + "\",status=\"" + k.second +
                          "\"} " + std::to_string(v));
        line(out, "# HELP vaultgate_http_requests_total Requests in intercepted and plain-HTTP connections, by the "
                  "client's HTTP version.");
        line(out, "# TYPE vaultgate_http_requests_total counter");
        for (std::size_t i = 0; i < known_protos_.size(); ++i)
            line(out, "vaultgate_http_requests_total{proto=\"" + std::string(known_protos_[i]) + "\"} " +
                          std::to_string(proto_requests_[i].load(std::memory_order_relaxed)));
        line(out, "# HELP vaultgate_injections_total Credentials injected, by vault and service.");
        line(out, "# TYPE vaultgate_injections_total counter");
        for (const auto& [k, v] : injections_)
            line(out, "vaultgate_injections_total{vault=\"" + escape_label(k.first) + "\",service=\"" +
                          escape_label(k.second) + "\"} " + std::to_string(v));
        line(out, "# HELP vaultgate_denials_total Refused destinations and requests, by reason.");
        line(out, "# TYPE vaultgate_denials_total counter");
        for (const auto& [k, v] : denials_)
            line(out, "vaultgate_denials_total{reason=\"" + escape_label(k) + "\"} " + std::to_string(v));
        const std::array<std::pair<const char*, const char*>, 4> token_series{{
            {"vaultgate_token_fetches_total", "Token endpoint requests for minted credentials, by vault and service."},
            {"vaultgate_token_fetch_failures_total", "Token fetches that gave no token, by vault and service."},
            {"vaultgate_token_cache_hits_total", "Requests served a cached minted token, by vault and service."},
            {"vaultgate_token_fetch_waits_total",
             "Requests that waited for a token fetch already under way, by vault and service."},
        }};
        for (std::size_t event = 0; event < token_series.size(); ++event) {
            const auto [name, help] = token_series[event];
            line(out, std::string("# HELP ") + name + " " + help);
            line(out, std::string("# TYPE ") + name + " counter");
            for (const auto& [k, counts] : tokens_)
                line(out, std::string(name) + "{vault=\"" + escape_label(k.first) + "\",service=\"" +
                              escape_label(k.second) + "\"} " + std::to_string(counts[event]));
        }
    }

    line(out, "# HELP vaultgate_upstream_latency_seconds Time from request sent to response head received.");
    line(out, "# TYPE vaultgate_upstream_latency_seconds histogram");
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < latency_buckets_.size(); ++i) {
        cumulative += latency_buckets_[i].load(std::memory_order_relaxed);
        if (i < latency_bounds_.size())
            std::snprintf(buf, sizeof buf, "vaultgate_upstream_latency_seconds_bucket{le=\"%g\"} %llu",
                          latency_bounds_[i], static_cast<unsigned long long>(cumulative));
        else
            std::snprintf(buf, sizeof buf, "vaultgate_upstream_latency_seconds_bucket{le=\"+Inf\"} %llu",
                          static_cast<unsigned long long>(cumulative));
        line(out, buf);
    }
    std::snprintf(buf, sizeof buf, "vaultgate_upstream_latency_seconds_sum %.6f",
                  static_cast<double>(latency_sum_micros_.load()) / 1e6);
    line(out, buf);
    std::snprintf(buf, sizeof buf, "vaultgate_upstream_latency_seconds_count %llu",
                  static_cast<unsigned long long>(latency_count_.load()));
    line(out, buf);
    return out;
}

}  // namespace vaultgate
