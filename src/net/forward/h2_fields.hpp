#pragma once
// Heads for an HTTP/2 origin, from and to the HTTP/1.1 form the pipeline
// decides and vets: the request line and Host become pseudo-fields, names go
// lower case, and connection-specific fields never cross (RFC 9113 section
// 8.2.2); trailers lose every field that frames or routes a message.
#include "vaultgate/http/message.hpp"
#include "vaultgate/state/request_plan.hpp"

#include <string_view>
#include <vector>

namespace vaultgate::net {

// The request for an HTTP/2 origin, pseudo-fields first, from the outgoing
// head (Host first, origin-form target). `te: trailers` goes along when
// `te_trailers` (the client asked for trailers, as gRPC does). The values are
// copies: the caller wipes both.
std::vector<Header> h2_request_fields(const RequestHead& head, bool te_trailers);

// The field the plan's service injects into (lower case), which HPACK must
// never index; empty when it injects into none (query, no binding).
std::string injected_field(const RequestPlan& plan);

// Whether `name` may travel in a trailer section: no pseudo-field, framing,
// routing, hop-by-hop or authentication field.
bool allowed_in_trailers(std::string_view name);

// A gRPC request (content-type application/grpc, +proto, +json...), which
// needs trailers, so HTTP/2 to the origin.
bool is_grpc(const RequestHead& head);

}  // namespace vaultgate::net
