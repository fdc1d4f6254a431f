// /healthz, /metrics and /v1/logs.
#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/admin/endpoints.hpp"
#include "vaultgate/admin/json_views.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

namespace vaultgate::admin {

namespace {

using nlohmann::ordered_json;

constexpr std::size_t default_log_limit = 100;
constexpr std::size_t max_log_limit = 10000;
constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4";

std::size_t parse_limit(const std::map<std::string, std::string>& query) {
    const auto it = query.find("limit");
    if (it == query.end() || it->second.empty()) return default_log_limit;
    const std::string& text = it->second;
    std::size_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > max_log_limit)
        fail(400, "invalid_query", "limit: expected an integer from 1 to " + std::to_string(max_log_limit));
    return value;
}

AdminResponse recent_logs(const EndpointContext& ctx, const AdminRequest& req) {
    const std::size_t limit = parse_limit(req.query);
    // Entries name vaults; the filter takes an id or a name, and one that
    // names no vault is an error rather than an empty list.
    std::optional<std::string> vault_name;
    if (const auto it = req.query.find("vault"); it != req.query.end() && !it->second.empty()) {
        const auto ref = ctx.catalog->known_vault(it->second);
        vault_name = ref.api ? ref.api->name : ref.config->name;
    }
    std::string session;
    if (const auto it = req.query.find("session"); it != req.query.end()) session = it->second;

    std::vector<AccessLogEntry> all;
    if (ctx.log) all = ctx.log->recent(std::numeric_limits<std::size_t>::max());
    std::vector<const AccessLogEntry*> picked;
    for (auto it = all.rbegin(); it != all.rend() && picked.size() < limit; ++it) {
        if (vault_name && it->vault != *vault_name) continue;
        if (!session.empty() && it->session != session) continue;
        picked.push_back(&*it);
    }
    std::reverse(picked.begin(), picked.end());  // oldest first, as the log reads
    return json_response(200, log_entries_json(picked));
}

AdminResponse render_metrics(const EndpointContext& ctx) {
    AdminResponse r;
    r.content_type = metrics_content_type;
    const MetricsExtras extras = ctx.metrics_extras ? ctx.metrics_extras() : MetricsExtras{};
    if (ctx.metrics) r.body = ctx.metrics->render(extras);
    return r;
}

}  // namespace

void add_open_routes(Router& router, const EndpointContext* ctx) {
    router.add("GET", "/healthz", [](const RouteCall&) {
        ordered_json body;
        body["status"] = "ok";
        return json_response(200, body);
    });
    // Readiness: the store loaded, and reachable. A replica whose database is
    // down still serves its last snapshot, so it says "degraded" with 200.
    router.add("GET", "/readyz", [ctx](const RouteCall&) {
        ordered_json body;
        if (!ctx->catalog->loaded()) {
            body["status"] = "starting";
            return json_response(503, body);
        }
        const bool reachable = ctx->catalog->store_available();
        body["status"] = reachable ? "ready" : "degraded";
        body["store"] = reachable ? "ok" : "unavailable";
        return json_response(200, body);
    });
    router.add("GET", "/metrics", [ctx](const RouteCall&) { return render_metrics(*ctx); });
}

void add_log_routes(Router& router, const EndpointContext* ctx) {
    router.add("GET", "/v1/logs", [ctx](const RouteCall& c) { return recent_logs(*ctx, c.request); });
}

}  // namespace vaultgate::admin
