#include "vaultgate/egress/policy.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vaultgate {

namespace {

// Exact hosts only, no wildcards: a "*.pythonhosted.org" style rule would also
// admit whatever else the ecosystem hosts under that suffix. No ports: like
// any bare rule, each allows 443 for CONNECT and 80 for plain http, and the
// latter only when the policy sets allow_http.
std::vector<DomainRule> make_bundle() {
    const char* const hosts[] = {
        // PyPI: the index, and the file host that serves the wheels and sdists.
        "pypi.org",
        "files.pythonhosted.org",
        // npm: metadata and tarballs both come from the registry host.
        "registry.npmjs.org",
        // Debian: the CDN mirror, security updates, and the archive of old releases.
        "deb.debian.org",
        "security.debian.org",
        "ftp.debian.org",
        // Ubuntu: the archive, security updates, and the ports archive (arm64 and others).
        "archive.ubuntu.com",
        "security.ubuntu.com",
        "ports.ubuntu.com",
        // crates.io: the API, the crate downloads, and the sparse index.
        "crates.io",
        "static.crates.io",
        "index.crates.io",
        // Go: the module proxy and the checksum database that go verifies against.
        "proxy.golang.org",
        "sum.golang.org",
        // RubyGems: the API and gem downloads, and the compact index.
        "rubygems.org",
        "index.rubygems.org",
        // Maven Central: the canonical host and its older alias.
        "repo.maven.apache.org",
        "repo1.maven.org",
    };
    std::vector<DomainRule> rules;
    for (const char* host : hosts) rules.push_back(DomainRule{host, false, std::nullopt});
    return rules;
}

}  // namespace

const std::vector<DomainRule>& package_manager_domains() {
    static const std::vector<DomainRule> bundle = make_bundle();
    return bundle;
}

}  // namespace vaultgate
