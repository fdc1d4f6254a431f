#include "net/mint/minted_step.hpp"

#include "net/mint/token_broker.hpp"

namespace vaultgate::net {

awaitable<MintedStep> obtain_minted_credential(Runtime& rt, const Binding& binding) {
    MintedStep step;
    TokenGrant grant;
    if (rt.token_broker)
        grant = co_await rt.token_broker->token(rt, binding);
    else
        grant.reason = token_reason::unreachable;
    if (grant.credential) {
        step.credential = std::move(grant.credential);
        co_return step;
    }
    // Fixed text: nothing of the endpoint's answer reaches the client.
    step.refusal =
        refusal(502, "credential_unavailable", "a token for this service could not be obtained", grant.reason);
    co_return step;
}

}  // namespace vaultgate::net
