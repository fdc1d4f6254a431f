#pragma once
// The AWS SDKs' variables in a bootstrap input: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN) are one credential set that
// vaultgate signs with (aws-sigv4), bound as a whole to AWS's endpoints rather
// than each to a URL variable. The sandbox keeps placeholders, which SDKs
// accept as keys, and the region, which is not a secret.
#include "vaultgate/credentials/bootstrap_env.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

inline constexpr std::string_view aws_access_key_var = "AWS_ACCESS_KEY_ID";
inline constexpr std::string_view aws_secret_key_var = "AWS_SECRET_ACCESS_KEY";
inline constexpr std::string_view aws_session_token_var = "AWS_SESSION_TOKEN";
// What the set is bound to: every AWS endpoint name; the proxy derives region
// and service from the host of each request.
inline constexpr std::string_view aws_bound_host = "*.amazonaws.com";

// Both keys of the pair are present with a value: they are secrets even
// though neither name ends in a secret suffix.
bool has_aws_key_pair(const EnvList& vars);

// The variable names of the set when both keys are among the secrets; the
// session token only when it is one of them too.
struct AwsCredentialSet {
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;  // empty: none
};
std::optional<AwsCredentialSet> find_aws_credential_set(const std::vector<SecretVar>& secrets);

// The names a set covers, for the callers that bind each other secret alone.
bool in_aws_set(const AwsCredentialSet& set, std::string_view name);

// SDKs read AWS_REGION or AWS_DEFAULT_REGION, depending on the SDK: with one
// of them given, both are set to it. False when neither is there.
bool complete_aws_region(EnvList& vars);

}  // namespace vaultgate
