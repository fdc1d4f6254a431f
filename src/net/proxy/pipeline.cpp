#include "net/proxy/pipeline.hpp"

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

}  // namespace vaultgate::net
