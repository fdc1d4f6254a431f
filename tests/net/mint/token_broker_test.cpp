// The token broker's rules that need no endpoint: the backoff window, and
// which inputs make a new cache key (a rotation of any of them).
#include "net/mint/token_broker.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace vaultgate::net {
namespace {

using std::chrono::seconds;

TEST(TokenBackoff, DoublesFromOneSecondToThirty) {
    EXPECT_EQ(token_backoff(1), seconds(1));
    EXPECT_EQ(token_backoff(2), seconds(2));
    EXPECT_EQ(token_backoff(3), seconds(4));
    EXPECT_EQ(token_backoff(5), seconds(16));
    EXPECT_EQ(token_backoff(6), seconds(30));
    EXPECT_EQ(token_backoff(1000), seconds(30));
}

Vault oauth_vault() {
    Vault vault;
    vault.name = "v";
    vault.credentials.emplace("CID", Secret("client"));
    vault.credentials.emplace("CS", Secret("secret-1"));
    vault.credentials.emplace("OTHER", Secret("unrelated"));
    ServiceBinding service;
    service.id = "v/0";
    service.config.host = "api.example.com";
    service.config.auth.type = AuthType::oauth2_client_credentials;
    service.config.auth.token_url = "https://auth.example.com/token";
    service.config.auth.client_id = "CID";
    service.config.auth.client_secret = "CS";
    vault.services.push_back(service);
    return vault;
}

TEST(MintingInputsDigest, ChangesWithEveryInputAndNothingElse) {
    const Vault base = oauth_vault();
    const std::string before = minting_inputs_digest(base, base.services[0]);
    EXPECT_EQ(minting_inputs_digest(base, base.services[0]), before);

    Vault other = oauth_vault();
    other.credentials.at("OTHER") = Secret("rotated, but not an input");
    other.services[0].config.host = "elsewhere.example.com";  // where the token goes, not how it is minted
    EXPECT_EQ(minting_inputs_digest(other, other.services[0]), before);

    const std::vector<std::function<void(Vault&)>> changes = {
        [](Vault& v) { v.credentials.at("CS") = Secret("secret-2"); },
        [](Vault& v) { v.credentials.at("CID") = Secret("client-2"); },
        [](Vault& v) { v.services[0].config.auth.scope = "read"; },
        [](Vault& v) { v.services[0].config.auth.audience = "api"; },
        [](Vault& v) { v.services[0].config.auth.client_auth = ClientAuth::post; },
        [](Vault& v) { v.services[0].config.auth.token_url = "https://auth.example.com/other"; },
        [](Vault& v) { v.services[0].config.auth.client_secret = "OTHER"; },
        [](Vault& v) { v.services[0].config.redact_response = true; },
        [](Vault& v) { v.services[0].id = "v/1"; },
    };
    for (std::size_t i = 0; i < changes.size(); ++i) {
        Vault changed = oauth_vault();
        changes[i](changed);
        EXPECT_NE(minting_inputs_digest(changed, changed.services[0]), before) << "change " << i;
    }
}

}  // namespace
}  // namespace vaultgate::net
