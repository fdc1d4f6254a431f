#pragma once
// The credential step of a request to a minted binding: the broker's token,
// or the refusal that keeps the request from going out without it.
#include "net/mint/minted_credential.hpp"
#include "net/upstream/runtime.hpp"
#include "vaultgate/state/request_plan.hpp"

#include <memory>

namespace vaultgate::net {

struct MintedStep {
    Refusal refusal;  // 502 credential_unavailable, its log reason a token_reason
    std::shared_ptr<const MintedCredential> credential;
};

// From rt.token_broker (refused when the runtime has none).
awaitable<MintedStep> obtain_minted_credential(Runtime& rt, const Binding& binding);

}  // namespace vaultgate::net
