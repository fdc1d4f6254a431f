// Matching a path against the route table.
#include "vaultgate/admin/router.hpp"

#include "vaultgate/admin/api_error.hpp"

namespace vaultgate::admin {

namespace {

bool matches(const std::vector<std::string>& pattern, const std::vector<std::string_view>& segments,
             std::vector<std::string_view>& params) {
    if (pattern.size() != segments.size()) return false;
    params.clear();
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == "*")
            params.push_back(segments[i]);
        else if (pattern[i] != segments[i])
            return false;
    }
    return true;
}

}  // namespace

void Router::add(std::string method, std::string_view pattern, Handler handler) {
    std::vector<std::string> parts;
    const auto segments = split_path(pattern);  // held: a range-for over *temporary would dangle
    for (const auto segment : *segments) parts.emplace_back(segment);
    routes_.push_back(Route{std::move(method), std::move(parts), std::move(handler)});
}

AdminResponse Router::route(const AdminRequest& request, const std::vector<std::string_view>& segments,
                            std::vector<std::string>& closed_sessions) const {
    std::vector<std::string_view> params;
    std::string allow;
    for (const auto& r : routes_) {
        if (!matches(r.pattern, segments, params)) continue;
        if (r.method == request.method) return r.handler(RouteCall{request, params, closed_sessions});
        allow += (allow.empty() ? "" : ", ") + r.method;
    }
    if (allow.empty()) fail(404, "not_found", "no such endpoint");
    throw ApiError{405, "method_not_allowed", "this path accepts " + allow, allow};
}

std::optional<std::vector<std::string_view>> split_path(std::string_view path) {
    path = path.substr(0, path.find_first_of("?#"));
    if (path.size() < 2 || path.front() != '/') return std::nullopt;
    std::vector<std::string_view> segments;
    std::size_t start = 1;
    for (;;) {
        const auto end = path.find('/', start);
        const auto segment = path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (segment.empty()) return std::nullopt;
        segments.push_back(segment);
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return segments;
}

}  // namespace vaultgate::admin
