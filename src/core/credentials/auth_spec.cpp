#include "vaultgate/credentials/auth_spec.hpp"

namespace vaultgate {

std::string AuthSpec::target_header() const {
    switch (type) {
        case AuthType::api_key:
            return header.empty() ? std::string("x-api-key") : header;
        case AuthType::header:
            return header;
        case AuthType::query:
            return {};
        case AuthType::bearer:
        case AuthType::basic:
        case AuthType::aws_sigv4:
        case AuthType::oauth2_client_credentials:
        case AuthType::github_app:
        case AuthType::jwt_bearer:
            return "Authorization";
    }
    return {};
}

std::vector<AuthSpec::CredentialField> AuthSpec::credential_fields() const {
    switch (type) {
        case AuthType::aws_sigv4: {
            std::vector<CredentialField> out{{"access_key_id", access_key_id},
                                             {"secret_access_key", secret_access_key}};
            if (!session_token.empty()) out.push_back({"session_token", session_token});
            return out;
        }
        case AuthType::oauth2_client_credentials:
            return {{"client_id", client_id}, {"client_secret", client_secret}};
        case AuthType::github_app:
            return {{"private_key", private_key}};
        case AuthType::api_key:
        case AuthType::bearer:
        case AuthType::basic:
        case AuthType::header:
        case AuthType::query:
        case AuthType::jwt_bearer:
            return {{"key", key}};
    }
    return {};
}

std::vector<std::string> AuthSpec::credential_names() const {
    std::vector<std::string> names;
    for (auto& field : credential_fields()) names.push_back(std::move(field.name));
    return names;
}

const std::string& AuthSpec::primary_credential() const {
    switch (type) {
        case AuthType::aws_sigv4:
            return secret_access_key;
        case AuthType::oauth2_client_credentials:
            return client_secret;
        case AuthType::github_app:
            return private_key;
        case AuthType::api_key:
        case AuthType::bearer:
        case AuthType::basic:
        case AuthType::header:
        case AuthType::query:
        case AuthType::jwt_bearer:
            return key;
    }
    return key;
}

std::string_view auth_type_name(AuthType type) {
    switch (type) {
        case AuthType::api_key:
            return "api-key";
        case AuthType::bearer:
            return "bearer";
        case AuthType::basic:
            return "basic";
        case AuthType::header:
            return "header";
        case AuthType::query:
            return "query";
        case AuthType::aws_sigv4:
            return "aws-sigv4";
        case AuthType::oauth2_client_credentials:
            return "oauth2-client-credentials";
        case AuthType::github_app:
            return "github-app";
        case AuthType::jwt_bearer:
            return "jwt-bearer";
    }
    return "api-key";
}

}  // namespace vaultgate
