// The sessions section: which vaults and which egress policy each session
// uses. Read last, since it refers to both.
#include "config_sections.hpp"

#include <optional>

namespace vaultgate::config_sections {

namespace {

using yaml::indexed;
using yaml::shown;

// The first two services, one of vault `a` and one of vault `b`, that bind
// the same host, port and path_prefix, as "vaults[i].services[j]" paths and
// what they bind; nullopt when there are none.
struct ServiceTie {
    std::string first, second, what;
};

std::optional<ServiceTie> tied_services(const std::vector<VaultConfig>& vaults, std::string_view a,
                                        std::string_view b) {
    for (std::size_t i = 0; i < vaults.size(); ++i) {
        if (vaults[i].name != a) continue;
        for (std::size_t k = 0; k < vaults.size(); ++k) {
            if (vaults[k].name != b) continue;
            for (std::size_t si = 0; si < vaults[i].services.size(); ++si)
                for (std::size_t sk = 0; sk < vaults[k].services.size(); ++sk) {
                    const auto& one = vaults[i].services[si];
                    if (!one.same_binding(vaults[k].services[sk])) continue;
                    return ServiceTie{indexed(indexed("vaults", i) + ".services", si),
                                      indexed(indexed("vaults", k) + ".services", sk),
                                      one.host + ":" + std::to_string(one.port) + " path_prefix " + one.path_prefix};
                }
        }
    }
    return std::nullopt;
}

std::vector<std::string> read_session_vaults(const yaml::Value& list, const std::string& session_name,
                                             const Config& cfg) {
    std::vector<std::string> out;
    for (const auto& item : list.list()) {
        if (!item.is_scalar()) item.fail("expected a vault name, got " + item.kind());
        const auto& name = item.scalar();
        bool exists = false;
        for (const auto& vault : cfg.vaults) exists = exists || vault.name == name;
        if (!exists) {
            std::vector<std::string> names;
            for (const auto& vault : cfg.vaults) names.push_back(vault.name);
            item.fail("unknown vault " + shown(name) +
                      (names.empty() ? std::string(" (no vaults are defined)") : " (vaults: " + joined(names) + ")"));
        }
        for (const auto& earlier : out) {
            if (earlier == name) item.fail("vault " + shown(name) + " is listed twice");
            // The most specific binding wins; two equal ones would leave it to list order.
            if (auto tie = tied_services(cfg.vaults, earlier, name))
                item.fail("session " + shown(session_name) + ": " + tie->first + " (vault " + shown(earlier) +
                          ") and " + tie->second + " (vault " + shown(name) + ") both bind " + tie->what +
                          "; change one path_prefix, or use the vaults in different sessions");
        }
        out.push_back(name);
    }
    return out;
}

}  // namespace

void read_sessions(const yaml::Value& section, Config& cfg) {
    for (const auto& s : section.entries()) {
        require_key_name(s, "session", section.path());
        const auto f = s.section({"vaults", "egress_policy"});
        SessionConfig session;
        if (auto* v = f.find("vaults")) session.vaults = read_session_vaults(*v, s.key(), cfg);
        std::vector<std::string> policies;
        for (const auto& [n, _] : cfg.egress_policies) policies.push_back(n);
        const auto known = policies.empty() ? std::string(" (no egress_policies are defined)")
                                            : " (egress_policies: " + joined(policies) + ")";
        if (auto* p = f.find("egress_policy")) {
            session.egress_policy = p->string();
            if (!cfg.egress_policies.count(session.egress_policy))
                p->fail("unknown egress policy " + shown(session.egress_policy) + known);
        } else if (!cfg.egress_policies.count(session.egress_policy)) {
            s.fail("no egress_policy given and there is no policy named '" + session.egress_policy + "'" + known);
        }
        cfg.sessions.emplace(s.key(), std::move(session));
    }
}

}  // namespace vaultgate::config_sections
