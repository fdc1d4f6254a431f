#include "vaultgate/credentials/aws_env.hpp"

#include <algorithm>

namespace vaultgate {

namespace {

bool has_value(const EnvList& vars, std::string_view name) {
    const std::string* value = find_env(vars, name);
    return value != nullptr && !value->empty();
}

bool has_secret(const std::vector<SecretVar>& secrets, std::string_view name) {
    return std::any_of(secrets.begin(), secrets.end(), [&](const SecretVar& s) { return s.name == name; });
}

}  // namespace

bool has_aws_key_pair(const EnvList& vars) {
    return has_value(vars, aws_access_key_var) && has_value(vars, aws_secret_key_var);
}

std::optional<AwsCredentialSet> find_aws_credential_set(const std::vector<SecretVar>& secrets) {
    if (!has_secret(secrets, aws_access_key_var) || !has_secret(secrets, aws_secret_key_var)) return std::nullopt;
    AwsCredentialSet set{std::string(aws_access_key_var), std::string(aws_secret_key_var), {}};
    if (has_secret(secrets, aws_session_token_var)) set.session_token = aws_session_token_var;
    return set;
}

bool in_aws_set(const AwsCredentialSet& set, std::string_view name) {
    return name == set.access_key_id || name == set.secret_access_key ||
           (!set.session_token.empty() && name == set.session_token);
}

bool complete_aws_region(EnvList& vars) {
    for (std::string_view from : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
        const std::string* value = find_env(vars, from);
        if (value == nullptr || value->empty()) continue;
        const std::string region = *value;
        if (!has_value(vars, "AWS_REGION")) set_env(vars, "AWS_REGION", region);
        if (!has_value(vars, "AWS_DEFAULT_REGION")) set_env(vars, "AWS_DEFAULT_REGION", region);
        return true;
    }
    return false;
}

}  // namespace vaultgate
