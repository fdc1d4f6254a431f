#pragma once
// HTTP/2 fields to HTTP/1.1 heads and back, for a stream served by an
// HTTP/1.1 origin: the pseudo-fields become the request line and Host, split
// cookies are joined again (RFC 9113 section 8.2.3), and connection-specific
// fields never cross.
#include "net/h2/h2_stream.hpp"
#include "vaultgate/http/message.hpp"

#include <string_view>
#include <vector>

namespace vaultgate::net::h2 {

// The request as the HTTP/1.1 pipeline decides it: Host from :authority (or
// the host field), the target from :path; a body without content-length is
// marked chunked, since the origin hears it so. Returns why the request is
// malformed (RFC 9113 section 8.3, and host against :authority), empty when
// it is not; `req` is taken over.
std::string_view to_request_head(H2Request&& req, RequestHead& out);

// The response's fields for the client: lower-case names, no hop-by-hop field
// nor one Connection lists, no content-length when `drop_length`.
std::vector<Header> response_fields(std::vector<Header>&& fields, bool drop_length);

}  // namespace vaultgate::net::h2
