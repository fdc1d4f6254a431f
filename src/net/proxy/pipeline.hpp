#pragma once
// One request through vaultgate, whatever the client's wire:
//   decide (pure, vaultgate/state/request_plan.hpp) -> credential step
//   (awaitable: minting a token will take network time) -> forward -> log.
// A refusal from any step ends in answer_refusal, the one place that turns it
// into the access-log line (with its metrics) and the reply; refusals made
// before a front exists (CONNECT, a connection's first head) end there too.
//
// A front is the client codec of one connection (HTTP/1.1 today: the MITM
// session and plain http:// forwarding). It offers:
//   awaitable<HeadOutcome> read_request(RequestHead&, ParseResult&)  the next head
//   Refusal head_read(HeadOutcome, const ParseResult&)  after any read: what a failed one is owed
//   std::shared_ptr<const GatewayState> snapshot()       the state this request is decided with
//   Decision decide(const GatewayState&, RequestHead&&)
//   awaitable<void> send_refusal(const Refusal&)          the reply, rendered for its wire
//   awaitable<Refusal> read_whole_body(const RequestPlan&, WipedBytes&)
//                                                         the client's body, read before sending (to sign it)
//   awaitable<bool> send_request(RequestPlan&, ExchangeResult&)
//                                                         the head (serialised for the origin's wire,
//                                                         then wiped) and the body to the origin
//   awaitable<void> relay_response(const RequestPlan&, Redactor*, ExchangeResult&)
//                                                         the origin's answer to the response sink
//   void forward_done(const ExchangeResult&)              the upstream kept or closed
//   void log(const RequestLine&)                          with its ingress, destination and start
// The forward calls return the exchange's own coroutines (exchange.hpp), so
// the pipeline adds no coroutine frame to them.
#include "net/forward/exchange.hpp"
#include "net/forward/h2_origin.hpp"
#include "net/io/tls_socket.hpp"
#include "net/mint/minted_credential.hpp"
#include "net/proxy/connection.hpp"
#include "net/upstream/dialer.hpp"
#include "vaultgate/state/request_plan.hpp"
#include "vaultgate/state/sigv4_step.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <chrono>
#include <optional>

namespace vaultgate::net {

// What the credential step hands on: the value to inject and how.
struct Credential {
    const AuthSpec* spec = nullptr;
    const Secret* value = nullptr;  // null: the request goes without a credential
    // A minted token: owns spec and value for the request's life, and its
    // redaction tables replace the service's.
    std::shared_ptr<const MintedCredential> minted;
};

struct CredentialStep {
    Refusal refusal;
    Credential credential;
    std::optional<SigningPlan> signing;  // aws-sigv4: signed last, by sign_for_aws
};

// The credential for the plan's binding: the vault's value, or a minted token
// (net/mint), which may take a fetch.
awaitable<CredentialStep> obtain_credential(Runtime& rt, const RequestPlan& plan);

// aws-sigv4, checked before anything is sent: the signing plan, or its refusal.
CredentialStep aws_signing_step(const RequestPlan& plan);

// Signs the outgoing head for aws-sigv4, after reading and hashing the body
// when the client gave no payload hash (`body` keeps it for the exchange).
// The head's last change: nothing may alter it between this and serialising.
template <class Front>
awaitable<Refusal> sign_for_aws(Front& front, RequestPlan& plan, const SigningPlan& signing, WipedBytes& body) {
    std::string payload_hash = signing.payload_hash;
    if (signing.hash_body()) {
        if (plan.framing.kind != BodyKind::none) {
            Refusal unread = co_await front.read_whole_body(plan, body);
            if (unread) co_return unread;
            send_from_buffer(plan, body.view());
        }
        payload_hash = sigv4::payload_sha256_hex(body.view());
    }
    co_return sign_outgoing(plan, signing.scope, payload_hash, std::chrono::system_clock::now());
}

// The one ending of a refused request: its access-log line, then its reply.
template <class Front>
awaitable<void> answer_refusal(Front& front, const Refusal& refusal, RequestLine line) {
    if (refusal.logged) {
        line.status = refusal.status;
        line.reason = refusal.reason;
        front.log(line);
    }
    co_await front.send_refusal(refusal);
}

// Where a refusal made before any front exists (a connection's first head, a
// CONNECT, a redirected connection) is logged: the connection's fields, no path.
struct RefusalSite {
    std::string_view ingress;  // "denied", or "tunnel" for a destination that failed
    std::string_view method;   // "-": a head that could not be read
    // Also what a denial's reply names. A reference, so a site is trivially
    // destroyed: GCC 12 frees a temporary holding a string twice in a co_await.
    const Authority& dest;
    clock::time_point start;
};

// The destination of a refusal that has none (a target that could not be read).
const Authority& no_destination();

// A refusal the client is told of but the log is not: a request that never fully arrived.
inline Refusal unlogged(Refusal r) {
    r.logged = false;
    return r;
}

// A request that could not be read (a broken request line or head, a target
// that is no proxy request): denied, with none of the client's bytes (they may
// hold a secret); its refusals give the reason `malformed_request`.
inline RefusalSite malformed_site(clock::time_point start) { return {"denied", "-", no_destination(), start}; }

void record_refusal(const ClientContext& ctx, const RefusalSite& site, const RequestLine& line);

// A warning that `dest` failed for `reason` (an access-log reason), with
// `detail` (names and system error texts only). At most one line per reason
// and destination per upstream_warning_interval; the next one that passes
// says how many were held back.
void warn_upstream_failure(const Runtime& rt, std::string_view reason, const Authority& dest, std::string_view detail);

// The refusal for a dial that failed without a denial: 502 resolve_failed,
// upstream_refused or upstream_unreachable, 504 upstream_timeout; its reason
// also in X-Vaultgate-Reason, and warned of (warn_upstream_failure). `peer`
// names the other end in the client's message ("the destination").
Refusal dial_failure(const Runtime& rt, const Authority& dest, const DialOutcome& outcome, std::string_view peer);

// A verified TLS connection to the bound origin `dest`, for a request of a
// session with `policy`, in `upstream` (its socket watched by `watchdog`);
// else the refusal: denied, unreachable, or a TLS handshake that failed.
// ALPN offers http/1.1, and h2 first when `offer_h2`.
awaitable<Refusal> open_bound_upstream(ClientContext& ctx, const EgressPolicy& policy, const Authority& dest,
                                       Watchdog& watchdog, std::optional<tls_stream>& upstream, bool offer_h2 = false);

// Where a request of an intercepted connection goes: the session's HTTP/2
// connection to the origin on this thread, if one is open; else an HTTP/1.1
// connection from the pool (into `upstream`); else a new verified connection
// offering h2 and http/1.1. An origin that picks h2 gets an
// H2OriginConnection, registered for the session's later requests (one dial
// per key at a time, h2_origin_registry.hpp); one that picks http/1.1 lands
// in `upstream`, watched by `watchdog`.
struct OriginRoute {
    Refusal refusal;
    std::shared_ptr<H2OriginConnection> h2;
    bool pooled = false;  // `upstream` came from the pool
};
awaitable<OriginRoute> route_to_origin(ClientContext& ctx, const EgressPolicy& policy, const Authority& dest,
                                       const std::string& pool_key, Watchdog& watchdog,
                                       std::optional<tls_stream>& upstream);

// The HTTP/1.1 reply to a refusal on a TCP client; with `half_close`, the
// client then reads the end of the stream.
awaitable<void> send_http_refusal(ClientContext& ctx, tcp::socket& client, const Refusal& refusal,
                                  const Authority& dest, bool half_close = true);

// The reply of answer_refusal below for an HTTP client before any front.
struct HttpRefusalReply {
    ClientContext& ctx;
    tcp::socket& client;
    bool half_close = true;
    awaitable<void> operator()(const Refusal& refusal, const Authority& dest) const {
        return send_http_refusal(ctx, client, refusal, dest, half_close);
    }
};

// The same ending before any front: `send(refusal, site.dest)` renders the
// reply for the connection's wire (an HTTP answer, a TLS alert).
template <class Send>
struct EarlyFront {
    ClientContext& ctx;
    const RefusalSite& site;
    const Send& send;
    void log(const RequestLine& line) { record_refusal(ctx, site, line); }
    awaitable<void> send_refusal(const Refusal& r) { return send(r, site.dest); }
};

template <class Send>
awaitable<void> answer_refusal(ClientContext& ctx, const RefusalSite& site, const Refusal& refusal, Send send) {
    EarlyFront<Send> front{ctx, site, send};
    co_await answer_refusal(front, refusal, RequestLine{});
}

// A front that reads heads itself (a connection of several requests).
template <class Front>
concept ReadsHeads = requires(Front& front, RequestHead& head, ParseResult& parsed) {
    front.read_request(head, parsed);
    front.head_read(HeadOutcome::ok, parsed);
};

// Serves one request; false means close the client connection. `head`: one
// the front read already (the connection's first request); else a front that
// ReadsHeads reads one.
template <class Front>
awaitable<bool> serve_request(Front& front, Runtime& rt, std::optional<RequestHead> head = std::nullopt) {
    if constexpr (ReadsHeads<Front>) {
        if (!head) {
            head.emplace();
            ParseResult parsed;
            const HeadOutcome outcome = co_await front.read_request(*head, parsed);
            const Refusal unread = front.head_read(outcome, parsed);
            if (outcome != HeadOutcome::ok) {
                if (unread) co_await answer_refusal(front, unread, RequestLine{});
                co_return false;
            }
        }
    }

    // The state current now: a rotated credential applies from this request on.
    const std::shared_ptr<const GatewayState> state = front.snapshot();
    Decision decision = front.decide(*state, std::move(*head));
    RequestPlan& plan = decision.plan;
    RequestLine line;
    line.request = &plan.summary;
    line.binding = plan.binding ? &*plan.binding : nullptr;
    if (decision.refusal) {
        co_await answer_refusal(front, decision.refusal, line);
        co_return false;
    }

    // Kept to the request's end: it may own a minted token. Empty without a binding.
    CredentialStep step = co_await obtain_credential(rt, plan);
    Refusal refused = std::move(step.refusal);
    WipedBytes signed_body;  // aws-sigv4: the body read to hash it, wiped when the request ends
    if (!refused && step.credential.value)
        refused = apply_credential(plan.outgoing, *step.credential.spec, *step.credential.value);
    else if (!refused && step.signing)
        refused = co_await sign_for_aws(front, plan, *step.signing, signed_body);
    if (!refused && (step.credential.value || step.signing)) {
        rt.metrics.injection(plan.binding->vault->name, plan.binding->service->id);
        line.credential = auth_type_name(plan.binding->service->config.auth.type);
    }
    if (refused) {
        wipe_head(plan.outgoing);
        co_await answer_refusal(front, refused, line);
        co_return false;
    }

    std::optional<Redactor> redactor;
    if (plan.redact) {
        const auto& minted = step.credential.minted;
        redactor.emplace(minted && minted->redaction ? minted->redaction : plan.binding->service->redaction);
    }
    ExchangeResult result;
    // The front serialises the head for its origin's wire and wipes it.
    if (co_await front.send_request(plan, result))
        co_await front.relay_response(plan, redactor ? &*redactor : nullptr, result);
    wipe_head(plan.outgoing);
    front.forward_done(result);
    if (result.upstream_seconds > 0)
        rt.metrics.upstream_latency(std::chrono::duration<double>(result.upstream_seconds));
    line.bytes_up = result.bytes_up;
    line.bytes_down = result.bytes_down;
    if (result.refusal) {
        co_await answer_refusal(front, result.refusal, line);
        co_return false;
    }
    line.status = result.status;
    line.reason = result.reason;
    front.log(line);
    co_return result.keep_client;
}

}  // namespace vaultgate::net
