#pragma once
// What vaultgate sends a token endpoint, before the network layer turns it into
// an HTTPS POST (method and Content-Length are the network layer's).
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate::minting {

struct ServiceAccountKey;

struct TokenRequest {
    std::string url;
    // Values are Secrets: Authorization carries a credential or a signed JWT.
    std::vector<std::pair<std::string, Secret>> headers;
    Secret body;  // empty for github-app
};

// How oauth2-client-credentials presents its client id and secret.
enum class ClientAuth {
    basic,  // RFC 6749 2.3.1: Authorization: Basic base64(form(id) ":" form(secret))
    post,   // client_id and client_secret as form fields of the body
};

// RFC 6749 4.4: Content-Type application/x-www-form-urlencoded, Accept
// application/json, body grant_type=client_credentials then scope and audience
// when not empty (then client_id, client_secret for `post`).
TokenRequest client_credentials_request(std::string_view token_url, const Secret& client_id,
                                        const Secret& client_secret, std::string_view scope, std::string_view audience,
                                        ClientAuth how);

// A JWT (iss = app_id, iat = now - 60 s, exp = now + 540 s: GitHub allows ten
// minutes and a clock a minute fast) as the Bearer of
// POST {api_url}/app/installations/{installation_id}/access_tokens, with
// Accept: application/vnd.github+json and X-GitHub-Api-Version: 2022-11-28.
// One trailing '/' of api_url is dropped. Throws MintError for a bad key, an
// empty app_id, or an installation_id that is not digits (it becomes a path).
TokenRequest github_installation_request(std::string_view api_url, std::string_view app_id,
                                         std::string_view installation_id, const Secret& pem_private_key,
                                         std::chrono::system_clock::time_point now);

// RFC 7523: a JWT (iss = client_email, scope = the scopes joined by spaces when
// there are any, aud = the token URL, iat = now, exp = now + 3600 s, kid =
// key_id when present; times in whole seconds) in
// grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT. The
// token URL is the override when not empty, else the key's token_uri.
// Throws MintError for a bad key.
TokenRequest jwt_bearer_request(const ServiceAccountKey& key, const std::vector<std::string>& scopes,
                                std::string_view token_url_override, std::chrono::system_clock::time_point now);

}  // namespace vaultgate::minting
