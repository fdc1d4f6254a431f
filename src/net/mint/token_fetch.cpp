#include "net/mint/token_fetch.hpp"

#include "vaultgate/minting/mint_error.hpp"
#include "vaultgate/minting/service_account.hpp"
#include "vaultgate/minting/token_request.hpp"

#include <chrono>
#include <exception>
#include <utility>

namespace vaultgate::net {

namespace {

const Secret& credential(const Vault& vault, const std::string& name) {
    static const Secret none;
    const auto found = vault.credentials.find(name);
    return found == vault.credentials.end() ? none : found->second;
}

minting::TokenRequest token_request(const Vault& vault, const AuthSpec& auth,
                                    std::chrono::system_clock::time_point now) {
    switch (auth.type) {
        case AuthType::oauth2_client_credentials:
            return minting::client_credentials_request(
                auth.token_url, credential(vault, auth.client_id), credential(vault, auth.client_secret), auth.scope,
                auth.audience,
                auth.client_auth == ClientAuth::post ? minting::ClientAuth::post : minting::ClientAuth::basic);
        case AuthType::github_app:
            return minting::github_installation_request(auth.api_url, auth.app_id, auth.installation_id,
                                                        credential(vault, auth.private_key), now);
        case AuthType::jwt_bearer:
            return minting::jwt_bearer_request(minting::parse_service_account(credential(vault, auth.key)), auth.scopes,
                                               auth.token_url, now);
        default:
            throw minting::MintError("auth type " + std::string(auth_type_name(auth.type)) + " mints no token");
    }
}

std::string_view reason_of(HttpsError::Kind kind) {
    switch (kind) {
        case HttpsError::Kind::bad_url:
            return token_reason::bad_input;
        case HttpsError::Kind::refused:
            return token_reason::refused;
        case HttpsError::Kind::unreachable:
            return token_reason::unreachable;
        case HttpsError::Kind::timeout:
            return token_reason::timeout;
        case HttpsError::Kind::tls:
            return token_reason::tls;
        case HttpsError::Kind::protocol:
            return token_reason::protocol;
        case HttpsError::Kind::too_large:
            return token_reason::too_large;
    }
    return token_reason::protocol;
}

// The request's header values are copies of credentials (Authorization): wiped
// when it goes, however the exchange ends.
struct WipedHeaders {
    HttpsRequest& request;
    ~WipedHeaders() {
        for (auto& [name, value] : request.headers) wipe_string(value);
    }
};

FetchOutcome failure(std::string_view reason, std::string detail) {
    FetchOutcome out;
    out.reason = reason;
    out.detail = std::move(detail);
    return out;
}

}  // namespace

awaitable<FetchOutcome> fetch_token(Runtime& rt, const Binding& binding, const HttpsLimits& limits) {
    const AuthSpec& auth = binding.service->config.auth;
    const auto now = std::chrono::system_clock::now();
    minting::TokenRequest minted_request;
    try {
        minted_request = token_request(*binding.vault, auth, now);
    } catch (const minting::MintError& e) {
        co_return failure(token_reason::bad_input, e.what());  // names the field, never a value
    }

    HttpsRequest request;
    WipedHeaders wiped{request};
    request.method = "POST";
    request.url = minted_request.url;
    for (const auto& [name, value] : minted_request.headers) request.headers.emplace_back(name, value.reveal());
    request.body = minted_request.body.reveal();

    std::optional<HttpsResponse> response;
    std::optional<HttpsError> error;
    try {
        response = co_await https_request(rt, request, limits);
    } catch (const HttpsError& e) {
        error = e;  // names the endpoint (scheme, host, port) only
    }
    if (error) co_return failure(reason_of(error->kind), error->what());

    const int expected = auth.type == AuthType::github_app ? 201 : 200;
    if (response->status != expected)
        co_return failure(token_reason::status, "the token endpoint answered " + std::to_string(response->status));
    auto parsed = auth.type == AuthType::github_app
                      ? minting::parse_github_token_response(response->status, response->body, now)
                      : minting::parse_oauth_token_response(response->status, response->body, now);
    if (auto* failed = std::get_if<minting::TokenFailure>(&parsed))
        co_return failure(token_reason::missing, std::move(failed->reason));
    FetchOutcome out;
    out.token = std::move(std::get<minting::MintedToken>(parsed));
    co_return out;
}

}  // namespace vaultgate::net
