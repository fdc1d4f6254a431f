#include "net/admin/explain_endpoint.hpp"

#include "net/upstream/dialer.hpp"
#include "net/upstream/runtime.hpp"
#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/admin/explain.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <optional>

namespace vaultgate::net {

namespace {

constexpr std::string_view explain_path = "/v1/explain";

std::string_view source_name(AddressSource source) {
    switch (source) {
        case AddressSource::literal:
            return "literal";
        case AddressSource::pinned:
            return "upstream.resolve";
        case AddressSource::dns:
            return "dns";
    }
    return "dns";
}

// The destination's addresses, each judged against the session's policy as
// dial_checked judges it.
admin::ExplainResolution judged(const Runtime& rt, const Candidates& found, const EgressPolicy& policy) {
    admin::ExplainResolution resolution;
    resolution.source = std::string(source_name(found.source));
    if (found.timed_out)
        resolution.error = "resolve_timeout";
    else if (found.error || found.denied != DenyReason::none)
        resolution.error = "resolve_failed";
    const bool pinned = found.source == AddressSource::pinned;
    for (const auto& ep : found.endpoints)
        resolution.addresses.emplace_back(to_ip_address(ep.address()), check_endpoint(rt, policy, ep, pinned));
    return resolution;
}

}  // namespace

bool is_explain_request(const AdminRequest& request) { return request.path == explain_path; }

awaitable<AdminResponse> answer_explain(std::shared_ptr<const Runtime> rt, AdminRequest request) {
    if (request.method != "POST") {
        AdminResponse r = admin::error_response(405, "method_not_allowed", "this path accepts POST");
        r.headers.emplace_back("Allow", "POST");
        co_return r;
    }
    std::optional<admin::Explanation> explanation;
    std::optional<AdminResponse> refused;
    try {
        const admin::ExplainQuery query = admin::parse_explain_query(request.body);
        // The snapshot the next proxied request would be decided with.
        const std::shared_ptr<const GatewayState> state = rt->snapshot();
        explanation = admin::explain_request(*state, query, std::chrono::system_clock::now());
    } catch (const admin::ApiError& e) {
        refused = admin::error_response(e.status, e.code, e.message);
    } catch (const std::exception&) {
        log_error("admin API: internal error while explaining a request");
        refused = admin::error_response(500, "internal_error", "internal error");
    }
    if (refused) co_return std::move(*refused);

    // Without a session the proxy never resolves: it answers 407 first.
    if (explanation->session) {
        const Candidates found = co_await find_candidates(*rt, *rt->settings(), explanation->destination);
        const admin::ExplainResolution resolution = judged(*rt, found, explanation->policy_rules);
        admin::settle_addresses(*explanation, resolution);
    }
    co_return admin::json_response(200, admin::explanation_json(*explanation));
}

}  // namespace vaultgate::net
