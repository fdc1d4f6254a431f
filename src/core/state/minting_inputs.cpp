// The digest a minted token is cached under (gateway_state.hpp).
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/state/gateway_state.hpp"

namespace vaultgate {

namespace {

// Length-prefixed, so that no two field lists give the same bytes.
void append_field(std::string& out, std::string_view value) {
    out.append(std::to_string(value.size())).append(1, ':').append(value);
}

}  // namespace

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

}  // namespace vaultgate
