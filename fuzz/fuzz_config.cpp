// Fuzzes the config loader. The contract is that a bad file is reported as a
// ConfigError naming file:line:column; any other exception escaping
// parse_config (a yaml-cpp exception, std::out_of_range, ...) would take the
// gateway down on a reload with a message nobody can act on. So only
// ConfigError is caught here: anything else escapes and libFuzzer reports it.
#include "fuzz_check.hpp"

#include "vaultgate/config/config.hpp"

#include <string>

using namespace vaultgate;

namespace {

const std::string source_name = "fuzz.yaml";

// What the loader promises about a config it accepted.
void check_config(const Config& cfg) {
    FUZZ_CHECK(cfg.source_path == source_name);
    for (const auto& [name, session] : cfg.sessions) {
        FUZZ_CHECK(!name.empty());
        FUZZ_CHECK(cfg.egress_policies.count(session.egress_policy) == 1);
        for (const std::string& v : session.vaults) {
            bool exists = false;
            for (const VaultConfig& vault : cfg.vaults) exists = exists || vault.name == v;
            FUZZ_CHECK(exists);
        }
    }
    for (const auto& [name, policy] : cfg.egress_policies) {
        for (const DomainRule& rule : policy.allowed_domains) {
            FUZZ_CHECK(!rule.host.empty());
            FUZZ_CHECK(!rule.port || *rule.port != 0);
        }
        for (const Cidr& c : policy.allowed_cidrs)
            FUZZ_CHECK(c.prefix_len >= 0 && c.prefix_len <= (c.base.v6 ? 128 : 32));
    }
    for (const VaultConfig& vault : cfg.vaults) {
        FUZZ_CHECK(!vault.name.empty());
        for (const ServiceConfig& s : vault.services) {
            FUZZ_CHECK(!s.host.empty() && s.port != 0);
            FUZZ_CHECK(!s.path_prefix.empty() && s.path_prefix.front() == '/');
            // A service may only inject a credential its own vault holds.
            FUZZ_CHECK(vault.credentials.count(s.auth.key) == 1);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        check_config(parse_config(text, source_name));
    } catch (const ConfigError& e) {
        // Messages are "file:line:col: what", so the operator can find the spot.
        const std::string what = e.what();
        FUZZ_CHECK(what.rfind(source_name + ":", 0) == 0);
    }
    return 0;
}
