#pragma once
// One admin connection: HTTP/1.1 requests read with Beast, the bearer token
// checked on the head before any byte of the body is read, the call handed to
// the admin API and its answer written back.
#include "net/io/types.hpp"
#include "vaultgate/admin/admin_http.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace vaultgate::net {

struct Runtime;

// What one listener allows: the connections it serves at once (more are reset
// on accept) and the time a request head and body may take together.
struct AdminLimits {
    std::size_t max_connections = 64;
    clock::duration request_timeout = std::chrono::seconds(10);
};

struct AdminConnectionSettings {
    std::function<AdminResponse(const AdminRequest&)> handler;
    std::optional<std::string> token;  // none: every request is let in (unix socket)
    AdminLimits limits;
    // The proxy's runtime, for POST /v1/explain (explain_endpoint.hpp); without
    // it that path goes to `handler` like any other.
    std::shared_ptr<const Runtime> runtime;
};

// Serves `socket` until the peer closes, a reply closes it or a deadline cuts
// it. `hold` is kept for as long as the connection lives (its slot).
template <class Socket>
awaitable<void> serve_admin_connection(Socket socket, std::shared_ptr<void> hold,
                                       std::shared_ptr<const AdminConnectionSettings> settings);

}  // namespace vaultgate::net
