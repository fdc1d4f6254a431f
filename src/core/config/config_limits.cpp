// The limits section: connection caps, header sizes, timeouts, threads.
#include "config_sections.hpp"

#include <limits>

namespace vaultgate::config_sections {

void read_limits(const yaml::Value& section, Limits& limits) {
    const auto f = section.section({"max_connections", "max_connections_per_client", "header_bytes", "header_count",
                                    "handshake_timeout", "header_timeout", "idle_timeout", "drain_timeout",
                                    "connect_timeout", "response_timeout", "upstream_idle_timeout", "worker_threads",
                                    "admin_connections", "sign_body_bytes", "h2_max_concurrent_streams"});
    constexpr auto any = std::numeric_limits<std::uint64_t>::max();
    auto count = [&](std::string_view key, std::size_t& out) {
        if (auto* p = f.find(key)) out = static_cast<std::size_t>(p->unsigned_integer(1, any));
    };
    auto duration = [&](std::string_view key, std::chrono::milliseconds& out) {
        if (auto* p = f.find(key)) out = p->duration();
    };
    count("max_connections", limits.max_connections);
    count("max_connections_per_client", limits.max_connections_per_client);
    count("header_bytes", limits.header_bytes);
    count("header_count", limits.header_count);
    count("admin_connections", limits.admin_connections);
    count("sign_body_bytes", limits.sign_body_bytes);
    if (auto* p = f.find("h2_max_concurrent_streams"))
        limits.h2_max_concurrent_streams = static_cast<std::size_t>(p->unsigned_integer(1, 10000));
    duration("handshake_timeout", limits.handshake_timeout);
    duration("header_timeout", limits.header_timeout);
    duration("idle_timeout", limits.idle_timeout);
    duration("drain_timeout", limits.drain_timeout);
    duration("connect_timeout", limits.connect_timeout);
    duration("response_timeout", limits.response_timeout);
    duration("upstream_idle_timeout", limits.upstream_idle_timeout);
    if (auto* p = f.find("worker_threads"))
        limits.worker_threads = static_cast<std::size_t>(p->unsigned_integer(0, 256));
}

}  // namespace vaultgate::config_sections
