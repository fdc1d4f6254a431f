#pragma once
// A token vaultgate minted for a bound service (oauth2-client-credentials,
// github-app, jwt-bearer), with what a request needs to use it: how it goes on
// the request and, for redact_response, the tables that scrub it from the
// response. Shared by the cache and every request that uses it; the token is
// wiped when the last of them lets go.
#include "vaultgate/credentials/auth_spec.hpp"
#include "vaultgate/credentials/redact.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <memory>

namespace vaultgate::net {

struct MintedCredential {
    Secret token;
    // bearer: Authorization: Bearer <token>; basic (github-app scheme basic):
    // Basic base64(x-access-token:<token>).
    AuthSpec injection;
    // Set when the service redacts responses: the token (and its basic form)
    // beside the service's own secret input, under the service's placeholder.
    std::shared_ptr<const RedactionPatterns> redaction;
    std::chrono::system_clock::time_point refresh_at;  // minted again from then on
};

// The credential of `token` for `service`; null when the service redacts and
// the token occurs in its own placeholder (it could not be scrubbed).
// `primary` is the value of the service's primary credential, redacted too.
std::shared_ptr<const MintedCredential> make_minted_credential(const ServiceBinding& service, const Secret* primary,
                                                               Secret token,
                                                               std::chrono::system_clock::time_point refresh_at);

}  // namespace vaultgate::net
