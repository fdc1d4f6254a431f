// The admin API's refusals and the JSON response shapes.
#include "vaultgate/admin/api_error.hpp"

namespace vaultgate::admin {

using nlohmann::ordered_json;

[[noreturn]] void fail(int status, std::string code, std::string message) {
    throw ApiError{status, std::move(code), std::move(message), {}};
}

AdminResponse json_response(int status, const ordered_json& body) {
    AdminResponse r;
    r.status = status;
    // Names are validated ASCII; `replace` keeps a stray byte from throwing here.
    r.body = body.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
    return r;
}

AdminResponse error_response(int status, std::string_view code, std::string_view message) {
    ordered_json error;
    error["code"] = code;
    error["message"] = message;
    ordered_json body;
    body["error"] = std::move(error);
    return json_response(status, body);
}

AdminResponse no_content() {
    AdminResponse r;
    r.status = 204;
    r.content_type.clear();
    return r;
}

std::string join_list(std::initializer_list<std::string_view> items) {
    std::string list;
    for (const auto item : items) list += (list.empty() ? "" : ", ") + std::string(item);
    return list;
}

}  // namespace vaultgate::admin
