#pragma once
// How the admin API refuses a request: an ApiError thrown from deep inside a
// check and turned into one JSON error response at the top, so that each check
// stays one line. Also the shapes of the API's JSON responses.
#include "vaultgate/admin/admin_http.hpp"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace vaultgate::admin {

struct ApiError {
    int status = 400;
    std::string code;
    std::string message;
    std::string allow;  // for 405
};

[[noreturn]] void fail(int status, std::string code, std::string message);

AdminResponse json_response(int status, const nlohmann::ordered_json& body);
// {"error":{"code":...,"message":...}}
AdminResponse error_response(int status, std::string_view code, std::string_view message);
// 204: no body and no content type.
AdminResponse no_content();

// "a, b, c", for the lists of allowed keys and methods in messages.
std::string join_list(std::initializer_list<std::string_view> items);

}  // namespace vaultgate::admin
