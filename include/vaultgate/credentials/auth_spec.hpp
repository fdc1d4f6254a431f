#pragma once
// How a bound service's credential goes on a request: the `auth` object of a
// service, as the config file and the admin API's `auth_config` give it.
// Every field that names a credential holds a credential *name* of the same
// vault, never a value; the rest is plain config.
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

enum class AuthType {
    // A vault credential injected as it is.
    api_key,
    bearer,
    basic,
    header,
    query,
    // The request is re-signed with AWS Signature Version 4.
    aws_sigv4,
    // A token vaultgate mints from the vault's credentials and caches.
    oauth2_client_credentials,
    github_app,
    jwt_bearer,
};

// How a minted GitHub installation token goes on the request.
enum class TokenScheme {
    bearer,  // Authorization: Bearer <token>
    basic,   // Authorization: Basic base64(x-access-token:<token>), as git sends it
};

// How the client authenticates at an OAuth2 token endpoint.
enum class ClientAuth {
    basic,  // the RFC 6749 2.3.1 Authorization header
    post,   // client_id and client_secret form fields
};

struct AuthSpec {
    AuthType type = AuthType::api_key;
    std::string header = "x-api-key";  // api_key, header
    // The credential to inject (api_key, bearer, basic, header, query); for
    // jwt-bearer, the service-account JSON key.
    std::string key;
    std::string user;            // basic
    std::string value_template;  // header: "Token {secret}"
    std::string param;           // query

    // aws-sigv4: credential names; region and service are empty when derived
    // from the host.
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;  // optional
    std::string region;
    std::string service;

    // oauth2-client-credentials; token_url also overrides jwt-bearer's.
    std::string token_url;
    std::string client_id;      // credential name
    std::string client_secret;  // credential name
    std::string scope;          // sent when non-empty
    std::string audience;       // sent when non-empty
    ClientAuth client_auth = ClientAuth::basic;

    // github-app
    std::string app_id;
    std::string installation_id;
    std::string private_key;  // credential name
    std::string api_url = "https://api.github.com";
    TokenScheme scheme = TokenScheme::bearer;

    // jwt-bearer
    std::vector<std::string> scopes;

    bool operator==(const AuthSpec&) const = default;

    // The header this spec writes ("Authorization" for bearer, basic, signed
    // and minted types), empty for query.
    std::string target_header() const;

    // The vault credentials this spec reads, each with the auth key that
    // names it ("key", "access_key_id", ...), required ones first; the
    // optional session_token only when set.
    struct CredentialField {
        std::string_view auth_key;
        std::string name;
    };
    std::vector<CredentialField> credential_fields() const;
    std::vector<std::string> credential_names() const;

    // The credential that stands for the service where one is named: in
    // redaction tables and their placeholder, and as Binding::secret. The
    // stored value itself for the static types, the one secret input for the
    // others (secret_access_key, client_secret, private_key, the JSON key).
    const std::string& primary_credential() const;

    // A signature or a minted token rather than a stored value.
    bool is_signed() const { return type == AuthType::aws_sigv4; }
    bool is_minted() const {
        return type == AuthType::oauth2_client_credentials || type == AuthType::github_app ||
               type == AuthType::jwt_bearer;
    }
};

// "api-key", "bearer", "basic", "header", "query", "aws-sigv4",
// "oauth2-client-credentials", "github-app", "jwt-bearer".
std::string_view auth_type_name(AuthType type);

}  // namespace vaultgate
