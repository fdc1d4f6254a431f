#pragma once
// POST /v1/explain, answered by the admin listener itself: the decision is the
// admin core's (vaultgate/admin/explain.hpp), and the destination's addresses
// are found and judged here by the dialer's own functions (upstream.resolve,
// the resolver pool, the self-connection and address checks), so the answer
// shows what a request would really meet. The lookup is awaited, never run on
// the admin thread.
#include "net/io/types.hpp"
#include "vaultgate/admin/admin_http.hpp"

#include <memory>

namespace vaultgate::net {

struct Runtime;

// Whether `request` is for /v1/explain (any method; others than POST get 405).
bool is_explain_request(const AdminRequest& request);

awaitable<AdminResponse> answer_explain(std::shared_ptr<const Runtime> rt, AdminRequest request);

}  // namespace vaultgate::net
