#include "vaultgate/state/sigv4_step.hpp"

#include <exception>
#include <stdexcept>

namespace vaultgate {

namespace {

// The vault's value for a credential the spec names; null when absent (the
// binding has no secret then, and never gets here).
const Secret* vault_value(const Vault& vault, const std::string& name) {
    const auto it = vault.credentials.find(name);
    return it == vault.credentials.end() ? nullptr : &it->second;
}

}  // namespace

SigningDecision plan_signing(const RequestPlan& plan) {
    SigningDecision d;
    const AuthSpec& spec = plan.binding->service->config.auth;
    const sigv4::Inspection inspection = sigv4::inspect(plan.outgoing);
    if (!inspection.unsupported.empty()) {
        d.refusal = refusal(400, "sigv4_unsupported", inspection.unsupported);
        return d;
    }
    // The Host vaultgate sends (the CONNECT authority) is what gets signed.
    const auto host = plan.outgoing.get("host");
    std::string why;
    auto scope = sigv4::derive_scope(host ? *host : std::string_view(), spec.region, spec.service, &why);
    if (!scope) {
        d.refusal = refusal(502, "credential_unusable",
                            "aws-sigv4 cannot sign for this host: " + why + " (auth.region, auth.service)");
        return d;
    }
    d.plan.scope = std::move(*scope);
    if (!inspection.hash_body) d.plan.payload_hash = inspection.payload_hash;
    return d;
}

Refusal body_too_large_to_sign(std::size_t limit) {
    return refusal(413, "body_too_large_to_sign",
                   "the body is over limits.sign_body_bytes (" + std::to_string(limit) +
                       " bytes), the most vaultgate reads to hash it; send X-Amz-Content-Sha256 with its hash, or "
                       "UNSIGNED-PAYLOAD where the service accepts it");
}

void send_from_buffer(RequestPlan& plan, std::string_view body) {
    plan.outgoing.remove("transfer-encoding");
    plan.outgoing.set("Content-Length", std::to_string(body.size()));
    plan.framing = BodyFraming{BodyKind::content_length, body.size()};
    plan.expect_continue = false;
    plan.buffered_body = body;
}

Refusal sign_outgoing(RequestPlan& plan, const sigv4::Scope& scope, std::string_view payload_hash,
                      std::chrono::system_clock::time_point now) {
    const Vault& vault = *plan.binding->vault;
    const AuthSpec& spec = plan.binding->service->config.auth;
    const Secret* access_key_id = vault_value(vault, spec.access_key_id);
    const Secret* secret_access_key = vault_value(vault, spec.secret_access_key);
    const Secret* session_token = spec.session_token.empty() ? nullptr : vault_value(vault, spec.session_token);
    if (!access_key_id || !secret_access_key || (!spec.session_token.empty() && !session_token))
        return refusal(503, "credential_missing", "the vault has no value for this service's credential");
    try {
        sigv4::sign_request(plan.outgoing, scope,
                            sigv4::Keys{access_key_id->reveal(), *secret_access_key, session_token}, payload_hash, now);
    } catch (const std::invalid_argument& e) {
        // The signer's messages name what is wrong, never a value.
        return refusal(502, "credential_unusable", std::string("aws-sigv4 cannot sign this request: ") + e.what());
    } catch (const std::exception&) {
        return refusal(502, "credential_unusable", "aws-sigv4 signing failed");
    }
    return {};
}

}  // namespace vaultgate
