#include "net/mint/minted_credential.hpp"

#include "vaultgate/credentials/bootstrap_env.hpp"  // placeholder_for
#include "vaultgate/crypto/digest.hpp"

#include <stdexcept>
#include <vector>

namespace vaultgate::net {

namespace {

constexpr std::string_view github_token_user = "x-access-token";

// Length-prefixed, so that no two field lists give the same bytes.
void append_field(std::string& out, std::string_view value) {
    out.append(std::to_string(value.size())).append(1, ':').append(value);
}

}  // namespace

std::shared_ptr<const MintedCredential> make_minted_credential(const ServiceBinding& service, const Secret* primary,
                                                               Secret token,
                                                               std::chrono::system_clock::time_point refresh_at) {
    const AuthSpec& auth = service.config.auth;
    auto minted = std::make_shared<MintedCredential>();
    if (auth.type == AuthType::github_app && auth.scheme == TokenScheme::basic) {
        minted->injection.type = AuthType::basic;
        minted->injection.user = std::string(github_token_user);
    } else {
        minted->injection.type = AuthType::bearer;
    }
    minted->refresh_at = refresh_at;
    if (service.config.redact_response) {
        std::vector<Secret> needles{token};
        if (minted->injection.type == AuthType::basic) {
            // What the header carries in base64, so what an origin may echo.
            const std::string_view raw = token.reveal();
            std::string pair;
            pair.reserve(github_token_user.size() + 1 + raw.size());
            pair.append(github_token_user).append(1, ':').append(raw);
            needles.emplace_back(std::move(pair));
            wipe_string(pair);
        }
        if (primary) needles.push_back(*primary);
        try {
            minted->redaction =
                std::make_shared<const RedactionPatterns>(needles, placeholder_for(auth.primary_credential()));
        } catch (const std::invalid_argument&) {
            return nullptr;  // the token occurs in the placeholder: redacting would put it back
        }
    }
    minted->token = std::move(token);
    return minted;
}

std::string minting_inputs_digest(const Vault& vault, const ServiceBinding& service) {
    const AuthSpec& auth = service.config.auth;
    std::string buffer;
    buffer.reserve(1024);
    append_field(buffer, service.id);
    append_field(buffer, auth_type_name(auth.type));
    append_field(buffer, auth.token_url);
    append_field(buffer, auth.scope);
    append_field(buffer, auth.audience);
    append_field(buffer, auth.client_auth == ClientAuth::basic ? "basic" : "post");
    append_field(buffer, auth.app_id);
    append_field(buffer, auth.installation_id);
    append_field(buffer, auth.api_url);
    append_field(buffer, auth.scheme == TokenScheme::basic ? "basic" : "bearer");
    append_field(buffer, std::to_string(auth.scopes.size()));
    for (const auto& scope : auth.scopes) append_field(buffer, scope);
    append_field(buffer, service.config.redact_response ? "redact" : "-");
    for (const auto& field : auth.credential_fields()) {
        append_field(buffer, field.auth_key);
        append_field(buffer, field.name);
        const auto value = vault.credentials.find(field.name);
        const bool present = value != vault.credentials.end();
        append_field(buffer, present ? "value" : "absent");
        if (present) append_field(buffer, value->second.reveal());
    }
    std::string digest = token_digest(buffer);
    wipe_string(buffer);
    return digest;
}

}  // namespace vaultgate::net
