#pragma once
// One reader per top-level section of the config file, each filling its part
// of the Config from the section's value (docs/reference/configuration.md).
// parse_config (config.cpp) calls them in an order where every section finds
// what it refers to already read: sessions come after vaults and policies,
// vaults after listen (a service may not point at vaultgate's own listeners).
#include "vaultgate/config/config.hpp"
#include "vaultgate/config/yaml_reader.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace vaultgate::config_sections {

void read_listen(const yaml::Value& section, Config& cfg);           // config_listen.cpp
void read_ca(const yaml::Value& section, Config& cfg);               // config_settings.cpp
void read_upstream(const yaml::Value& section, Config& cfg);         // config_settings.cpp
void read_store(const yaml::Value& section, Config& cfg);            // config_settings.cpp
void read_admin(const yaml::Value& section, Config& cfg);            // config_settings.cpp
void read_log(const yaml::Value& section, Config& cfg);              // config_settings.cpp
void read_mitm(const yaml::Value& section, Config& cfg);             // config_settings.cpp
void read_limits(const yaml::Value& section, Limits& limits);        // config_limits.cpp
void read_vaults(const yaml::Value& section, Config& cfg);           // config_vaults.cpp
void read_egress_policies(const yaml::Value& section, Config& cfg);  // config_policies.cpp
void read_sessions(const yaml::Value& section, Config& cfg);         // config_sessions.cpp

// Refuses a map entry whose key is not a valid `kind` name ("session",
// "policy", "credential"), pointing at the key under the map's path.
void require_key_name(const yaml::Value& entry, std::string_view kind, const std::string& map_path);

// "a, b, c".
std::string joined(const std::vector<std::string>& names);

}  // namespace vaultgate::config_sections
