#include "net/proxy/pipeline.hpp"

#include "net/forward/h2_origin_registry.hpp"
#include "net/mint/minted_step.hpp"
#include "net/proxy/proxy_responses.hpp"
#include "net/upstream/tls_contexts.hpp"
#include "net/upstream/upstream_pool.hpp"

namespace vaultgate::net {

awaitable<CredentialStep> obtain_credential(Runtime& rt, const RequestPlan& plan) {
    CredentialStep step;
    if (!plan.binding) co_return step;
    const AuthSpec& spec = plan.binding->service->config.auth;
    if (spec.is_signed()) co_return aws_signing_step(plan);
    if (spec.is_minted()) {
        MintedStep minted = co_await obtain_minted_credential(rt, *plan.binding);
        step.refusal = std::move(minted.refusal);
        if (const auto& c = minted.credential) step.credential = Credential{&c->injection, &c->token, c};
        co_return step;
    }
    step.credential = Credential{&spec, plan.binding->secret, nullptr};
    co_return step;
}

CredentialStep aws_signing_step(const RequestPlan& plan) {
    SigningDecision decision = plan_signing(plan);
    CredentialStep step;
    step.refusal = std::move(decision.refusal);
    if (!step.refusal) step.signing = std::move(decision.plan);
    return step;
}

const Authority& no_destination() {
    static const Authority none;
    return none;
}

void record_refusal(const ClientContext& ctx, const RefusalSite& site, const RequestLine& line) {
    auto e = access_entry(ctx, site.ingress, site.method, site.dest, site.start);
    e.status = line.status;
    e.reason = std::string(line.reason);
    ctx.rt->record(e);
}

void warn_upstream_failure(const Runtime& rt, std::string_view reason, const Authority& dest, std::string_view detail) {
    const std::string where = format_authority(dest);
    rt.upstream_warnings.warn(std::string(reason) + " " + where,
                              "upstream " + where + ": " + std::string(reason) + " (" + std::string(detail) + ")");
}

Refusal dial_failure(const Runtime& rt, const Authority& dest, const DialOutcome& outcome, std::string_view peer) {
    const std::string_view reason = dial_failure_reason(outcome);
    warn_upstream_failure(rt, reason, dest, dial_failure_detail(outcome));
    const std::string who(peer);
    Refusal r;
    if (reason == "upstream_timeout")
        r = refusal(504, "upstream_timeout", who + " did not answer in time");
    else if (reason == "resolve_failed")
        r = refusal(502, "resolve_failed", "the name of " + who + " does not resolve");
    else if (reason == "upstream_refused")
        r = refusal(502, "upstream_refused", who + " refused the connection");
    else
        r = refusal(502, "upstream_unreachable", "cannot connect to " + who);
    r.reason_header = true;
    return r;
}

namespace {

// The refusal for a failed TLS handshake with a bound origin: a timeout, a
// certificate that did not verify (untrusted, expired, another host's), or
// a handshake that failed otherwise (no shared protocol or cipher, an alert).
Refusal upstream_handshake_refusal(bool timed_out, long verify) {
    Refusal r;
    if (timed_out)
        r = refusal(504, "upstream_timeout", "the TLS handshake with the bound origin timed out");
    else if (verify != X509_V_OK)
        r = refusal(502, "upstream_tls_failed",
                    std::string("the bound origin's certificate did not verify against upstream.ca_file: ") +
                        X509_verify_cert_error_string(verify));
    else
        r = refusal(502, "upstream_handshake_failed",
                    "the TLS handshake with the bound origin failed (no shared protocol or cipher, or it closed)");
    r.reason_header = true;
    return r;
}

}  // namespace

awaitable<Refusal> open_bound_upstream(ClientContext& ctx, const EgressPolicy& policy, const Authority& dest,
                                       Watchdog& watchdog, std::optional<tls_stream>& upstream, bool offer_h2) {
    Runtime& rt = *ctx.rt;
    tcp::socket socket(watchdog.executor());
    auto dialed = co_await dial_checked(rt, *ctx.settings, policy, dest, socket, watchdog);
    if (!dialed.ok()) {
        if (dialed.denied != DenyReason::none) co_return denial(dialed.denied, &policy);
        co_return dial_failure(rt, dest, dialed, "the bound origin");
    }
    upstream.emplace(std::move(socket), *ctx.settings->upstream_tls);
    watchdog.watch(upstream->next_layer());
    const auto drop = [&] {
        watchdog.unwatch(upstream->next_layer());
        error_code ignored;
        upstream->next_layer().close(ignored);
        upstream.reset();
    };
    if (!expect_upstream_identity(*upstream, dest)) {
        drop();
        Refusal r = refusal(502, "upstream_tls_failed", "cannot set up TLS to the bound origin");
        r.reason_header = true;
        co_return r;
    }
    if (offer_h2) offer_h2_upstream(*upstream);
    watchdog.arm(ctx.settings->limits.connect_timeout);
    auto [ec] = co_await upstream->async_handshake(ssl::stream_base::client, use_tuple);
    if (ec) {
        const bool timed_out = watchdog.expired();
        const long verify = SSL_get_verify_result(upstream->native_handle());
        drop();
        Refusal r = upstream_handshake_refusal(timed_out, verify);
        warn_upstream_failure(rt, r.reason, dest,
                              timed_out             ? std::string("TLS handshake timed out")
                              : verify != X509_V_OK ? std::string(X509_verify_cert_error_string(verify))
                                                    : ec.message());
        co_return r;
    }
    co_return Refusal{};
}

namespace {

H2OriginLimits origin_limits(const Limits& limits) {
    H2OriginLimits out;
    out.header_bytes = limits.header_bytes;
    out.header_count = limits.header_count;
    out.idle_timeout = limits.upstream_idle_timeout;
    return out;
}

// Waits for another request's dial to the same key at most this often
// before dialling without waiting.
constexpr int max_dial_waits = 3;

}  // namespace

awaitable<OriginRoute> route_to_origin(ClientContext& ctx, const EgressPolicy& policy, const Authority& dest,
                                       const std::string& pool_key, Watchdog& watchdog,
                                       std::optional<tls_stream>& upstream) {
    H2OriginRegistry& origins = this_thread_h2_origins();
    const Limits& limits = ctx.settings->limits;
    bool owner = false;
    for (int waits = 0;; ++waits) {
        OriginRoute found;
        if ((found.h2 = origins.find(pool_key))) co_return found;
        if (auto pooled = this_thread_upstream_pool().take(pool_key)) {
            upstream.emplace(std::move(*pooled));
            watchdog.watch(upstream->next_layer());
            found.pooled = true;
            co_return found;
        }
        if (waits >= max_dial_waits) break;
        if ((owner = origins.begin_dial(pool_key))) break;
        co_await origins.wait_for_dial(pool_key, limits.connect_timeout + limits.handshake_timeout);
    }
    OriginRoute route;
    route.refusal = co_await open_bound_upstream(ctx, policy, dest, watchdog, upstream, true);
    const bool h2 = !route.refusal && selected_alpn(*upstream) == "h2";
    // A failed dial leaves no memory: the next request offers h2 again.
    if (owner) origins.end_dial(pool_key, h2 || route.refusal);
    if (!h2) co_return route;
    watchdog.unwatch(upstream->next_layer());
    route.h2 = std::make_shared<H2OriginConnection>(std::move(*upstream), origin_limits(limits), ctx.rt->draining);
    upstream.reset();
    route.h2->start();
    origins.add(pool_key, route.h2);
    co_return route;
}

awaitable<void> send_http_refusal(ClientContext& ctx, tcp::socket& client, const Refusal& refusal,
                                  const Authority& dest, bool half_close) {
    co_await write_all(client, refusal_response(refusal, dest), *ctx.watchdog, ctx.settings->limits.idle_timeout);
    if (!half_close) co_return;
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace vaultgate::net
