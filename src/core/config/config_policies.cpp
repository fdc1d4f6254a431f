// The egress_policies section: what a session may reach besides its bound
// services.
#include "config_sections.hpp"

#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/egress/policy.hpp"

namespace vaultgate::config_sections {

namespace {

using yaml::shown;

void read_domains(const yaml::Value& list, EgressPolicy& policy) {
    for (const auto& item : list.list()) {
        if (!item.is_scalar()) item.fail("expected a string, got " + item.kind());
        std::string why;
        auto rule = DomainRule::parse(item.scalar(), &why);
        if (!rule) item.fail("invalid domain rule " + shown(item.scalar()) + (why.empty() ? "" : ": " + why));
        policy.allowed_domains.push_back(std::move(*rule));
    }
}

void read_cidrs(const yaml::Value& list, EgressPolicy& policy) {
    for (const auto& item : list.list()) {
        if (!item.is_scalar()) item.fail("expected a string, got " + item.kind());
        auto cidr = parse_cidr(item.scalar());
        if (!cidr) item.fail("expected an IP address or CIDR like 10.0.0.0/8 or fd00::/8, got " + shown(item.scalar()));
        policy.allowed_cidrs.push_back(*cidr);
    }
}

}  // namespace

void read_egress_policies(const yaml::Value& section, Config& cfg) {
    for (const auto& p : section.entries()) {
        require_key_name(p, "policy", section.path());
        const auto f = p.section(validation::policy_keys);
        EgressPolicy policy;
        policy.name = p.key();
        if (auto* x = f.find("allow_https")) policy.allow_https = x->boolean();
        if (auto* x = f.find("allow_http")) policy.allow_http = x->boolean();
        if (auto* x = f.find("allow_package_managers")) policy.allow_package_managers = x->boolean();
        if (auto* x = f.find("tunnel_sni_check")) policy.tunnel_sni_check = x->boolean();
        if (auto* x = f.find("allowed_domains")) read_domains(*x, policy);
        if (auto* x = f.find("allowed_cidrs")) read_cidrs(*x, policy);
        cfg.egress_policies.emplace(p.key(), std::move(policy));
    }
}

}  // namespace vaultgate::config_sections
