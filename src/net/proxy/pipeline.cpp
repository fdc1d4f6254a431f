#include "net/proxy/pipeline.hpp"

#include "net/proxy/proxy_responses.hpp"

namespace vaultgate::net {

awaitable<CredentialStep> obtain_credential(const RequestPlan& plan) {
    CredentialStep step;
    if (plan.binding) step.credential = Credential{&plan.binding->service->config.auth, plan.binding->secret};
    co_return step;
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

awaitable<void> send_http_refusal(ClientContext& ctx, tcp::socket& client, const Refusal& refusal,
                                  const Authority& dest, bool half_close) {
    co_await write_all(client, refusal_response(refusal, dest), *ctx.watchdog, ctx.settings->limits.idle_timeout);
    if (!half_close) co_return;
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace vaultgate::net
