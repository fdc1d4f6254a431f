#pragma once
// One admin API call and its answer, as the admin domain defines them: the
// listener fills an AdminRequest from the wire and writes the AdminResponse
// back. Plain data, no HTTP library.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vaultgate {

struct AdminRequest {
    std::string method;                        // "GET", "POST", ...
    std::string path;                          // "/v1/vaults/vlt_x/credentials", without the query
    std::map<std::string, std::string> query;  // decoded query parameters
    // May hold a credential value. handle() wipes its own copies; the caller
    // owns this string and should wipe it (wipe_string) once handle() returns.
    std::string body;
};

struct AdminResponse {
    int status = 200;
    std::string body;  // empty for 204
    std::string content_type = "application/json";
    // Extra response headers, e.g. "Allow" on a 405.
    std::vector<std::pair<std::string, std::string>> headers;
};

}  // namespace vaultgate
