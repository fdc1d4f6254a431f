// Signed and minted credentials that could never work: an aws-sigv4 host
// with no region or service to sign for, a github-app key or a
// service-account key that does not parse. Each would refuse every request
// with a 502, so check-config and `serve` say so first.
#include "preflight_checks.hpp"

#include "vaultgate/minting/jwt.hpp"
#include "vaultgate/minting/mint_error.hpp"
#include "vaultgate/minting/service_account.hpp"
#include "vaultgate/signing/sigv4.hpp"
#include "vaultgate/state/gateway_state.hpp"

namespace vaultgate::preflight {

namespace {

std::string service_key(std::size_t vault, std::size_t service) {
    return "vaults[" + std::to_string(vault) + "].services[" + std::to_string(service) + "].auth";
}

// A key that a minted type signs with; values that are unset are reported
// as unset credentials elsewhere.
std::optional<std::string> unusable_key(const AuthSpec& auth, const Secret& value) {
    try {
        if (auth.type == AuthType::github_app) minting::check_rs256_key(value);
        if (auth.type == AuthType::jwt_bearer)
            minting::check_rs256_key(minting::parse_service_account(value).private_key);
    } catch (const minting::MintError& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

}  // namespace

void check_auth(const Config& config, Findings& out) {
    std::vector<std::string> ignored;
    std::shared_ptr<const GatewayState> state;
    try {
        state = build_state(config, ignored);
    } catch (const std::exception&) {
        return;  // an unreadable credential file: check_referenced_files names it
    }
    for (std::size_t i = 0; i < config.vaults.size(); ++i) {
        const VaultConfig& vc = config.vaults[i];
        const auto vault = state->vaults.find(vc.name);
        for (std::size_t j = 0; j < vc.services.size(); ++j) {
            const ServiceConfig& service = vc.services[j];
            const AuthSpec& auth = service.auth;
            // A wildcard host is signed for each request's own host.
            if (auth.type == AuthType::aws_sigv4 && !service.host.starts_with("*.")) {
                std::string why;
                if (!sigv4::derive_scope(service.host, auth.region, auth.service, &why))
                    out.push_back({PreflightFinding::Severity::error, service_key(i, j), "aws-sigv4: " + why, {}});
            }
            if (!auth.is_minted() || vault == state->vaults.end()) continue;
            const auto value = vault->second.credentials.find(auth.primary_credential());
            if (value == vault->second.credentials.end()) continue;
            if (auto why = unusable_key(auth, value->second))
                out.push_back({PreflightFinding::Severity::error,
                               service_key(i, j),
                               "credential " + auth.primary_credential() + " cannot sign tokens: " + *why,
                               {}});
        }
    }
}

}  // namespace vaultgate::preflight
