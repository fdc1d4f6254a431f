#include "net/forward/h2_fields.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace vaultgate::net {

namespace {

std::string lower_name(std::string_view name) {
    std::string out(name);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

}  // namespace

std::vector<Header> h2_request_fields(const RequestHead& head, bool te_trailers) {
    std::vector<Header> out;
    out.reserve(head.headers.size() + 4);
    const auto host = head.get("host");
    out.push_back({":method", head.method});
    out.push_back({":scheme", "https"});
    out.push_back({":authority", std::string(host.value_or(""))});
    out.push_back({":path", head.target});
    const auto tokens = connection_tokens(head.headers);
    for (const Header& h : head.headers) {
        if (iequals(h.name, "host") || is_hop_by_hop(h.name) || listed_in(tokens, h.name)) continue;
        out.push_back({lower_name(h.name), h.value});
    }
    if (te_trailers) out.push_back({"te", "trailers"});
    return out;
}

std::string injected_field(const RequestPlan& plan) {
    if (!plan.binding) return {};
    const AuthSpec& auth = plan.binding->service->config.auth;
    if (auth.type == AuthType::api_key || auth.type == AuthType::header) return lower_name(auth.header);
    if (auth.type == AuthType::query) return {};
    return "authorization";
}

bool allowed_in_trailers(std::string_view name) {
    static constexpr std::array<std::string_view, 9> refused = {
        "content-length", "content-type", "content-encoding", "content-range", "host",
        "authorization",  "cookie",       "set-cookie",       "trailer",
    };
    if (name.empty() || name[0] == ':' || is_hop_by_hop(name)) return false;
    return std::none_of(refused.begin(), refused.end(), [&](std::string_view r) { return iequals(r, name); });
}

bool is_grpc(const RequestHead& head) {
    const auto type = head.get("content-type");
    if (!type) return false;
    const std::string value = lower_name(*type);
    constexpr std::string_view grpc = "application/grpc";
    return value.compare(0, grpc.size(), grpc) == 0 &&
           (value.size() == grpc.size() || value[grpc.size()] == '+' || value[grpc.size()] == ';');
}

}  // namespace vaultgate::net
