#pragma once
// The aws-sigv4 credential step without I/O: whether a request can be signed
// and where its payload hash comes from (decided before any body byte is
// read), the switch to a body vaultgate read whole, and the signature itself,
// which is the outgoing head's last change before it is serialised.
#include "vaultgate/signing/sigv4.hpp"
#include "vaultgate/state/request_plan.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace vaultgate {

struct SigningPlan {
    sigv4::Scope scope;
    // The client's x-amz-content-sha256 (64 hex digits or UNSIGNED-PAYLOAD),
    // kept and signed; empty: vaultgate reads the body and hashes it.
    std::string payload_hash;
    bool hash_body() const { return payload_hash.empty(); }
};

struct SigningDecision {
    Refusal refusal;
    SigningPlan plan;
};

// For a plan bound to an aws-sigv4 service: 400 sigv4_unsupported (a
// streaming payload, aws-chunked, a presigned URL), or 502
// credential_unusable when the host gives no region or service and the
// service sets none; else the scope and the payload hash's source.
SigningDecision plan_signing(const RequestPlan& plan);

// 413 body_too_large_to_sign, naming the limit.
Refusal body_too_large_to_sign(std::size_t limit);

// After vaultgate read the body whole into `body`: the head says
// Content-Length (a chunked body is sent re-framed), the exchange sends
// `body` instead of streaming the client's, and the client's
// 100-continue was answered already.
void send_from_buffer(RequestPlan& plan, std::string_view body);

// Signs plan.outgoing with the binding's keys (access_key_id,
// secret_access_key and, when the service names it, session_token from its
// vault) for `payload_hash`: 502 credential_unusable when a key cannot be
// used (the message names no value). Nothing may change the head after it.
Refusal sign_outgoing(RequestPlan& plan, const sigv4::Scope& scope, std::string_view payload_hash,
                      std::chrono::system_clock::time_point now);

}  // namespace vaultgate
