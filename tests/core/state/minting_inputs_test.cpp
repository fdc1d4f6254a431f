// Which inputs make a new cache key for a minted token (a rotation of any
// of them), and that the key is computed once, when the state is built.
#include "vaultgate/state/gateway_state.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace vaultgate {
namespace {

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

// Requests compare the digest the state was built with; none hashes again.
TEST(MintingInputsDigest, IsSetWhenTheStateIsBuiltForMintedServicesOnly) {
    Vault vault = oauth_vault();
    ServiceBinding plain;
    plain.id = "v/1";
    plain.config.host = "plain.example.com";
    plain.config.auth.type = AuthType::bearer;
    plain.config.auth.key = "OTHER";
    vault.services.push_back(plain);
    prepare_services(vault, nullptr);
    EXPECT_EQ(vault.services[0].inputs_digest, minting_inputs_digest(vault, vault.services[0]));
    EXPECT_FALSE(vault.services[0].inputs_digest.empty());
    EXPECT_TRUE(vault.services[1].inputs_digest.empty());
}

}  // namespace
}  // namespace vaultgate
