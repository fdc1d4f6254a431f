// The small sections: ca, upstream, store, admin, log and mitm.
#include "config_sections.hpp"

#include "vaultgate/egress/address.hpp"
#include "vaultgate/egress/host.hpp"

#include <algorithm>

namespace vaultgate::config_sections {

using yaml::shown;

void read_ca(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"cert", "key"});
    if (auto* p = f.find("cert")) cfg.ca_cert = p->nonempty_string();
    if (auto* p = f.find("key")) cfg.ca_key = p->nonempty_string();
}

void read_upstream(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"ca_file", "resolve"});
    if (auto* p = f.find("ca_file")) cfg.upstream_ca_file = p->nonempty_string();
    if (auto* p = f.find("resolve")) {
        const std::string& path = p->path();
        for (const auto& r : p->entries()) {
            const auto name = r.key();
            const auto host = normalize_host(name);
            if (!host)
                r.fail_at_key(path, "invalid host " + shown(name) + ": " + std::string(host_error_text(host.error)));
            if (host.kind != HostKind::name)
                r.fail_at_key(path, shown(name) + " is an IP address; only names can be resolved");
            // Messages name the host as it will be looked up.
            const auto item = r.with_path(yaml::child(path, *host.host));
            const auto ip_text = item.string();
            if (!parse_ip_strict(ip_text)) item.fail("expected an IP address, got " + shown(ip_text));
            if (!cfg.upstream_resolve.emplace(*host.host, ip_text).second)
                r.fail_at_key(path, "host " + shown(*host.host) + " is listed twice");
        }
    }
}

void read_store_url(const yaml::Value& value, Config& cfg) {
    const auto url = value.nonempty_string();
    if (auto problem = store_url_problem(url)) value.fail(*problem);
    cfg.store_url = url;
}

void read_store(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"path", "url", "master_key_file", "removals_retention", "snapshot_path",
                                    "snapshot_interval", "snapshot_max_age"});
    if (f.find("path") && f.find("url")) f.find("url")->fail("set either store.path or store.url, not both");
    for (const char* key : {"snapshot_path", "snapshot_interval", "snapshot_max_age"})
        if (auto* p = f.find(key); p && !f.find("url"))
            p->fail("is for a shared store (store.url); a file store is its own snapshot");
    if (auto* p = f.find("url")) read_store_url(*p, cfg);
    if (auto* p = f.find("path")) cfg.store_path = p->nonempty_string();
    if (auto* p = f.find("master_key_file")) cfg.store_master_key_file = p->optional_path();
    if (auto* p = f.find("removals_retention")) cfg.store_removals_retention = p->duration();
    if (auto* p = f.find("snapshot_path")) cfg.store_snapshot_path = p->nonempty_string();
    if (auto* p = f.find("snapshot_interval")) cfg.store_snapshot_interval = p->duration();
    if (auto* p = f.find("snapshot_max_age")) cfg.store_snapshot_max_age = p->duration();
}

void read_admin(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"token_file"});
    if (auto* p = f.find("token_file")) cfg.admin_token_file = p->optional_path();
}

void read_log(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"access", "level"});
    if (auto* p = f.find("access")) cfg.log_access = p->nonempty_string();
    if (auto* p = f.find("level")) {
        const auto level = p->string();
        if (level != "error" && level != "warn" && level != "info" && level != "debug")
            p->fail("expected one of error, warn, info, debug, got " + shown(level));
        cfg.log_level = level;
    }
}

void read_mitm(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"alpn"});
    if (auto* p = f.find("alpn")) {
        std::vector<std::string> protocols;
        for (const auto& item : p->list()) {
            auto name = item.string();
            if (name != "h2" && name != "http/1.1") item.fail("expected h2 or http/1.1, got " + shown(name));
            if (std::find(protocols.begin(), protocols.end(), name) != protocols.end())
                item.fail(shown(name) + " is listed twice");
            protocols.push_back(std::move(name));
        }
        if (protocols.empty()) p->fail("expected at least one protocol: h2, http/1.1");
        cfg.mitm_alpn = std::move(protocols);
    }
}

}  // namespace vaultgate::config_sections

namespace vaultgate {

// A libpq URI; the password stays out of the config and the command line
// (PGPASSFILE and the other libpq conventions supply it).
std::optional<std::string> store_url_problem(std::string_view url) {
    if (!url.starts_with("postgresql://") && !url.starts_with("postgres://"))
        return "expected a postgresql:// URL";
    const auto rest = url.substr(url.find("//") + 2);
    const auto authority = rest.substr(0, rest.find_first_of("/?"));
    const auto at = authority.rfind('@');
    if ((at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos) ||
        url.find("password=") != std::string_view::npos)
        return "holds a password; give it through PGPASSFILE (or another libpq source) instead";
    return std::nullopt;
}

}  // namespace vaultgate
