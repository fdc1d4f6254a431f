#pragma once
// The decision step of a proxied request, without I/O: from the published
// state and a parsed request head, either a refusal (what the client is told
// and the access log says) or a plan (the binding, the head for the origin,
// how the exchange goes). Any client codec (HTTP/1.1 today) feeds it a head.
#include "vaultgate/credentials/inject.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/state/gateway_state.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace vaultgate {

// A request vaultgate answers itself instead of forwarding, or an exchange
// that failed before the origin's answer reached the client. One place in the
// proxy turns it into the reply and the access-log line.
struct Refusal {
    enum class Form {
        error,       // {"error":{"code","message"}}
        denied,      // 403 egress_denied naming `deny` and the destination
        proxy_auth,  // 407 with Proxy-Authenticate
    };
    int status = 0;  // 0: no refusal
    Form form = Form::error;
    std::string_view code;    // the body's error code (error form)
    std::string_view reason;  // the access log's reason
    std::string message;      // the body's message (error form): fixed text, never request bytes
    DenyReason deny = DenyReason::none;
    // The denied form: the egress policy that refused, "inline" for a
    // session's own, empty when no policy was involved.
    std::string policy;
    bool close = true;           // the client connection ends after the reply
    bool logged = true;          // false: the reply only (a request that never fully arrived)
    bool reason_header = false;  // the error form carries X-Vaultgate-Reason too

    explicit operator bool() const { return status != 0; }
};

// An error-form refusal whose log reason is its code unless given.
Refusal refusal(int status, std::string_view code, std::string message, std::string_view reason = {});
// A 403 egress_denied refusal; `policy`, when given, is the one that refused.
Refusal denial(DenyReason reason, const EgressPolicy* policy = nullptr);
// A 407 asking for Proxy-Authorization, logged with `reason`. The reply only
// says whether credentials were missing (`session_missing`) or not accepted,
// never which check failed: a client cannot learn whether an id exists.
Refusal proxy_auth_refusal(std::string_view reason);
// How a denial names `policy`: its config name, or "inline" for a session's own.
std::string policy_label(const EgressPolicy& policy);

// What the forward step sends and how it handles the exchange.
struct RequestPlan {
    const Session* session = nullptr;  // whose policy the upstream connection follows
    std::optional<Binding> binding;    // the bound service whose credential goes in; none outside every bound path
    RequestHead outgoing;              // the head for the origin: end-to-end fields, Host first, origin-form target
    RequestHead summary;               // the client's method, target and version (no fields): log and response framing
    BodyFraming framing;               // of the client's body
    bool expect_continue = false;      // the client waits for 100 before its body
    bool websocket = false;            // an Upgrade: websocket the origin may accept
    bool client_close = false;         // the client asked to close after this exchange
    bool redact = false;               // redact_response: the secret is scrubbed from the response
    // Set when vaultgate read the body whole (to hash it for aws-sigv4): sent
    // from there, with Content-Length, instead of streamed from the client.
    std::optional<std::string_view> buffered_body;
};

// Either `refusal` is set, or `plan` is what to do. When refused after the
// binding was chosen, plan.binding names it for the log line.
struct Decision {
    Refusal refusal;
    RequestPlan plan;
};

// A request inside a MITM'd tunnel to `dest`: framing, Host and target against
// the tunnel, method, the session (still there, unexpired), the path rule and
// binding, the credential's presence, redaction, Expect. `req` is taken over.
Decision decide_bound_request(const GatewayState& state, std::string_view session_id, const Authority& dest,
                              RequestHead&& req, std::chrono::system_clock::time_point now);

// An absolute-form http:// request to `dest` (origin_form: its path and
// query): the session's plain-HTTP policy, framing, method, Expect. Never
// bound: a credential only travels over verified TLS. `req` is taken over.
Decision decide_plain_request(const GatewayState& state, const Session& session, const Authority& dest,
                              std::string origin_form, RequestHead&& req);

// The credential applied to the outgoing head: a refusal (502
// credential_unusable) when it cannot be sent in a header, the head unchanged.
Refusal apply_credential(RequestHead& outgoing, const AuthSpec& spec, const Secret& value);

// Request headers that pass to the origin: end-to-end fields only, with the
// framing set from the parsed body and Host first. Expect is consumed here.
struct OutgoingHead {
    RequestHead head;
    bool expect_continue = false;
    bool bad_expect = false;
};

OutgoingHead build_outgoing_head(RequestHead&& client_head, std::string origin_form, std::string host_header,
                                 const BodyFraming& framing, bool websocket, bool strip_accept_encoding);

}  // namespace vaultgate
