#include "net/proxy/pipeline.hpp"

#include "net/mint/minted_step.hpp"
#include "net/proxy/proxy_responses.hpp"

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

void wipe_head(RequestHead& head) {
    for (auto& h : head.headers) wipe_string(h.value);
    wipe_string(head.target);
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

awaitable<void> send_http_refusal(ClientContext& ctx, tcp::socket& client, const Refusal& refusal,
                                  const Authority& dest, bool half_close) {
    co_await write_all(client, refusal_response(refusal, dest), *ctx.watchdog, ctx.settings->limits.idle_timeout);
    if (!half_close) co_return;
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace vaultgate::net
