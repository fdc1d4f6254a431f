#pragma once
// Method and path to handler. A path is matched segment by segment against
// patterns such as "/v1/vaults/*/credentials", where "*" takes any one segment
// and hands it to the handler. No match gives 404; a path that matches with
// another method gives 405 with Allow naming the methods it has.
#include "vaultgate/admin/admin_http.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate::admin {

struct RouteCall {
    const AdminRequest& request;
    const std::vector<std::string_view>& params;  // the segments "*" matched, in order
    std::vector<std::string>& closed_sessions;    // sessions the handler ended
};

class Router {
public:
    using Handler = std::function<AdminResponse(const RouteCall&)>;

    // Methods of one pattern are listed in Allow in the order they were added.
    void add(std::string method, std::string_view pattern, Handler handler);

    // Throws ApiError (404 or 405) when no route takes the request.
    AdminResponse route(const AdminRequest& request, const std::vector<std::string_view>& segments,
                        std::vector<std::string>& closed_sessions) const;

private:
    struct Route {
        std::string method;
        std::vector<std::string> pattern;
        Handler handler;
    };
    std::vector<Route> routes_;
};

// "/v1/vaults/x" -> {"v1", "vaults", "x"}; nullopt for anything with an empty
// segment (a trailing or doubled slash), which no endpoint has.
std::optional<std::vector<std::string_view>> split_path(std::string_view path);

}  // namespace vaultgate::admin
