#pragma once
// An outbound HTTPS client for the requests vaultgate makes on its own behalf,
// such as asking a token endpoint for a credential. HTTP/1.1 by Boost.Beast
// over the proxy's own upstream path: the dialer (upstream.resolve, the
// address rules, never one of vaultgate's listeners) and the upstream TLS
// context (verified against upstream.ca_file, the host name checked).
#include "net/upstream/runtime.hpp"
#include "vaultgate/util/secret.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate::net {

struct HttpsRequest {
    std::string method = "POST";
    std::string url;  // https://HOST[:PORT][/PATH][?QUERY]
    // Sent as given, after Host; vaultgate adds User-Agent unless given,
    // Content-Length, and Connection: close. Their copies are wiped when freed.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string_view body;  // sent from the caller's buffer, which the caller wipes
};

struct HttpsResponse {
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    Secret body;  // may hold a minted token: wiped when freed

    // The first value of a header (name case-insensitive), if any.
    std::optional<std::string> header(std::string_view name) const;
};

struct HttpsLimits {
    // Connecting (lookup and TCP) is bounded by limits.connect_timeout, as
    // for upstreams; this bounds the whole request, connecting included.
    clock::duration total_timeout = std::chrono::seconds(30);
    std::size_t max_body = 1 << 20;
};

// Why a request failed. The message names the endpoint (scheme, host, port),
// never its path, query, headers or body, which may carry credentials.
struct HttpsError : std::runtime_error {
    enum class Kind {
        bad_url,      // not https://HOST..., or a host vaultgate does not accept
        refused,      // the address rules: a private address, one of vaultgate's listeners
        unreachable,  // no address, or none accepted the connection
        timeout,      // connect_timeout or total_timeout ran out
        tls,          // the handshake failed: certificate not trusted, wrong host name
        protocol,     // the answer is not HTTP/1.x, or ends early
        too_large,    // the body is over max_body
    };
    HttpsError(Kind kind, const std::string& message) : std::runtime_error(message), kind(kind) {}
    Kind kind;
};

// One request on a connection of its own. Throws HttpsError.
awaitable<HttpsResponse> https_request(Runtime& rt, const HttpsRequest& request, const HttpsLimits& limits = {});

}  // namespace vaultgate::net
