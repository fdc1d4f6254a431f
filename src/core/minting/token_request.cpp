// The requests that buy a token. Every buffer that holds a client secret or a
// signed JWT reserves its final size first (growing would leave copies in freed
// memory) and ends in a Secret or is wiped.
#include "vaultgate/minting/token_request.hpp"

#include "vaultgate/minting/jwt.hpp"
#include "vaultgate/minting/mint_error.hpp"
#include "vaultgate/minting/service_account.hpp"
#include "vaultgate/util/encoding.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>

namespace vaultgate::minting {

namespace {

constexpr std::string_view form_content_type = "application/x-www-form-urlencoded";
constexpr std::string_view jwt_bearer_grant = "urn:ietf:params:oauth:grant-type:jwt-bearer";

// GitHub's limits: iat a minute back for clock drift, exp at most ten minutes after iat.
constexpr std::chrono::seconds github_iat_back{60};
constexpr std::chrono::seconds github_exp_ahead{540};
constexpr std::chrono::seconds jwt_bearer_lifetime{3600};

std::int64_t unix_seconds(std::chrono::system_clock::time_point t) {
    return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

// A form body's fields, name=value joined by '&', sized before it is written.
struct FormField {
    std::string_view name;
    std::string_view value;
};

Secret form_body(std::span<const FormField> fields) {
    std::size_t size = 0;
    for (const auto& f : fields) size += f.name.size() + 1 + form_encoded_size(f.value) + 1;
    std::string body;
    body.reserve(size);
    for (const auto& f : fields) {
        if (!body.empty()) body += '&';
        body += f.name;
        body += '=';
        append_form_encoded(body, f.value);
    }
    return Secret(std::move(body));
}

// RFC 6749 2.3.1: each part form-encoded, then "Basic " base64("id:secret").
Secret basic_client_auth(const Secret& client_id, const Secret& client_secret) {
    std::string pair;
    pair.reserve(form_encoded_size(client_id.reveal()) + 1 + form_encoded_size(client_secret.reveal()));
    append_form_encoded(pair, client_id.reveal());
    pair += ':';
    append_form_encoded(pair, client_secret.reveal());
    constexpr std::string_view scheme = "Basic ";
    std::string value;
    value.reserve(scheme.size() + base64_size(pair.size()));
    value += scheme;
    append_base64(value, pair, Base64Alphabet::standard, true);
    wipe_string(pair);
    return Secret(std::move(value));
}

Secret bearer(const Secret& token) {
    constexpr std::string_view scheme = "Bearer ";
    std::string value;
    value.reserve(scheme.size() + token.size());
    value += scheme;
    value += token.reveal();
    return Secret(std::move(value));
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

TokenRequest client_credentials_request(std::string_view token_url, const Secret& client_id,
                                        const Secret& client_secret, std::string_view scope, std::string_view audience,
                                        ClientAuth how) {
    TokenRequest request;
    request.url = token_url;
    request.headers.emplace_back("Content-Type", Secret(std::string(form_content_type)));
    request.headers.emplace_back("Accept", Secret("application/json"));
    if (how == ClientAuth::basic)
        request.headers.emplace_back("Authorization", basic_client_auth(client_id, client_secret));

    // Optional fields are left out, not sent empty: an empty scope may ask for none.
    std::vector<FormField> fields{{"grant_type", "client_credentials"}};
    if (!scope.empty()) fields.push_back({"scope", scope});
    if (!audience.empty()) fields.push_back({"audience", audience});
    if (how == ClientAuth::post) {
        fields.push_back({"client_id", client_id.reveal()});
        fields.push_back({"client_secret", client_secret.reveal()});
    }
    request.body = form_body(fields);
    return request;
}

TokenRequest github_installation_request(std::string_view api_url, std::string_view app_id,
                                         std::string_view installation_id, const Secret& pem_private_key,
                                         std::chrono::system_clock::time_point now) {
    // It becomes a path segment: anything but digits could leave the installation's path.
    if (!all_digits(installation_id)) throw MintError("the github-app installation_id is not a number");
    if (app_id.empty()) throw MintError("the github-app app_id is empty");
    const nlohmann::json claims{
        {"iss", app_id}, {"iat", unix_seconds(now - github_iat_back)}, {"exp", unix_seconds(now + github_exp_ahead)}};
    const Secret jwt = sign_rs256_jwt(claims, pem_private_key);

    TokenRequest request;
    if (api_url.ends_with('/')) api_url.remove_suffix(1);
    request.url.append(api_url).append("/app/installations/").append(installation_id).append("/access_tokens");
    request.headers.emplace_back("Authorization", bearer(jwt));
    request.headers.emplace_back("Accept", Secret("application/vnd.github+json"));
    request.headers.emplace_back("X-GitHub-Api-Version", Secret("2022-11-28"));
    return request;
}

TokenRequest jwt_bearer_request(const ServiceAccountKey& key, const std::vector<std::string>& scopes,
                                std::string_view token_url_override, std::chrono::system_clock::time_point now) {
    const std::string_view token_url = token_url_override.empty() ? key.token_uri : token_url_override;
    std::string scope;
    for (const auto& s : scopes) {
        if (!scope.empty()) scope += ' ';
        scope += s;
    }
    nlohmann::json claims{{"iss", key.client_email},
                          {"aud", token_url},
                          {"iat", unix_seconds(now)},
                          {"exp", unix_seconds(now + jwt_bearer_lifetime)}};
    if (!scope.empty()) claims["scope"] = scope;
    const Secret jwt = sign_rs256_jwt(claims, key.private_key, key.key_id);

    TokenRequest request;
    request.url = token_url;
    request.headers.emplace_back("Content-Type", Secret(std::string(form_content_type)));
    request.headers.emplace_back("Accept", Secret("application/json"));
    const FormField fields[] = {{"grant_type", jwt_bearer_grant}, {"assertion", jwt.reveal()}};
    request.body = form_body(fields);
    return request;
}

}  // namespace vaultgate::minting
