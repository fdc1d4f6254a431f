#pragma once
// The admin API on the wire: an AdminRequest from a Beast request head, and a
// Beast response from an AdminResponse, with the reason phrase of its status.
#include "vaultgate/admin/admin_http.hpp"
#include "vaultgate/http/message.hpp"

#include <boost/beast/http.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace vaultgate::net {

namespace http = boost::beast::http;

using AdminHttpRequest = http::request<http::string_body>;
using AdminHttpResponse = http::response<http::string_body>;

// Method, path (as sent, without the query) and form-decoded query of an
// origin-form target; nullopt when the target is not one.
std::optional<AdminRequest> admin_request_of(const http::request_header<>& head);

// The proxy path's framing rules (request_framing) on the head Beast read,
// which Beast alone would let pass: one non-empty Host (required in HTTP/1.1),
// one Content-Length and no list, Transfer-Encoding only as a lone "chunked".
FramingResult admin_framing(const http::request_header<>& head);

// True when the head carries exactly one "Authorization: Bearer <token>"
// (scheme in any case) whose token equals `token`, compared in constant time.
bool bearer_token_matches(const http::request_header<>& head, std::string_view token);

// The HTTP/1.1 response for `reply`. A 204 carries neither body nor
// Content-Length; a 401 names the scheme to use, as HTTP requires.
AdminHttpResponse render_admin_response(AdminResponse reply, bool close);

// A JSON error reply from the listener itself (before the API sees the call).
AdminResponse listener_error(int status, std::string_view code, std::string_view message);

}  // namespace vaultgate::net
