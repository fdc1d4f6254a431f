// Translating between Beast messages and the admin domain's request and response.
#include "net/admin/admin_wire.hpp"

#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/crypto/digest.hpp"  // constant_time_equal
#include "vaultgate/http/message.hpp"

#include <boost/url/parse.hpp>

namespace vaultgate::net {

std::optional<AdminRequest> admin_request_of(const http::request_header<>& head) {
    const auto target = boost::urls::parse_origin_form(head.target());
    if (!target) return std::nullopt;
    AdminRequest request;
    request.method = std::string(head.method_string());
    request.path = std::string(target->encoded_path());
    // Form-decoded: '+' is a space. A key given twice keeps its last value.
    for (const auto& param : target->params()) {
        if (param.key.empty() && !param.has_value) continue;  // "a=1&&b=2"
        request.query[param.key] = param.value;
    }
    return request;
}

FramingResult admin_framing(const http::request_header<>& head) {
    RequestHead framing_head;
    framing_head.version_minor = head.version() == 10 ? 0 : 1;
    // Only the fields framing looks at are copied: never the token.
    for (const auto& field : head) {
        const auto name = field.name();
        if (name == http::field::host || name == http::field::content_length || name == http::field::transfer_encoding)
            framing_head.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    }
    return request_framing(framing_head);
}

bool bearer_token_matches(const http::request_header<>& head, std::string_view token) {
    if (head.count(http::field::authorization) != 1) return false;
    std::string_view v = head[http::field::authorization];
    constexpr std::string_view scheme = "bearer ";
    if (v.size() <= scheme.size() || !iequals(v.substr(0, scheme.size()), scheme)) return false;
    v.remove_prefix(scheme.size());
    return constant_time_equal(v, token);
}

AdminHttpResponse render_admin_response(AdminResponse reply, bool close) {
    AdminHttpResponse res;
    res.version(11);
    res.result(static_cast<unsigned>(reply.status));
    const bool no_content = reply.status == 204;
    if (!reply.content_type.empty()) res.set(http::field::content_type, reply.content_type);
    if (!no_content) {
        res.body() = std::move(reply.body);
        res.content_length(res.body().size());
    }
    res.set(http::field::cache_control, "no-store");
    if (close) res.set(http::field::connection, "close");
    if (reply.status == 401) res.set(http::field::www_authenticate, "Bearer realm=\"vaultgate\"");
    for (const auto& [name, value] : reply.headers) {
        // Handler-set names and values are fixed text; CR/LF would split the head.
        if (name.find_first_of("\r\n") != std::string::npos || value.find_first_of("\r\n") != std::string::npos)
            continue;
        res.insert(name, value);
    }
    return res;
}

AdminResponse listener_error(int status, std::string_view code, std::string_view message) {
    return admin::error_response(status, code, message);
}

}  // namespace vaultgate::net
