#include "net/mint/minted_credential.hpp"

#include "vaultgate/credentials/bootstrap_env.hpp"  // placeholder_for

#include <stdexcept>
#include <vector>

namespace vaultgate::net {

namespace {

constexpr std::string_view github_token_user = "x-access-token";

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

}  // namespace vaultgate::net
