#pragma once
// JSON forms of a bound service and of an egress policy: the shapes of the admin
// API request bodies (docs/reference/admin-api.md) and of the store payload. Decoding
// validates with the same rules as the config loader, so a service created over
// the API can do nothing a config-file service could not. No Asio here.
#include "vaultgate/config/config.hpp"
#include "vaultgate/egress/address.hpp"
#include "vaultgate/egress/policy.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace vaultgate {

enum class JsonTextError { none, invalid, duplicate_key };

// Parses the text of a request body. No exception and no parser message is
// made: those quote the text near the error, which may be a credential. An
// object that names a key twice sets duplicate_key: parsers differ on which
// value wins, so what is checked and what is used could differ. The tree is
// returned as parsed even then, for the caller to wipe; on invalid it is a
// discarded value.
nlohmann::json parse_json_text(std::string_view text, JsonTextError* error);

// {"host","port","path_prefix","auth_config":{"type",...},"redact_response"}.
// Every key is written, so that the text says exactly what applies.
nlohmann::json service_to_json(const ServiceConfig& service);

// Absent or null optional keys take the config defaults (port 443, path_prefix
// "/", redact_response false, api-key header "x-api-key"). The credential named
// by auth_config.key is only checked for its form: whether the vault holds it is
// the caller's question. On bad input returns nullopt and sets *error to
// "field.path: what is wrong"; values are never quoted in it, since a request
// body may carry a secret in the wrong place and errors end up in responses and
// logs.
std::optional<ServiceConfig> service_from_json(const nlohmann::json& j, std::string* error);

// {"allow_https","allow_http","allow_package_managers","allowed_domains":[...],
// "allowed_cidrs":[...],"tunnel_sni_check"}. The policy's `name` is not part of this form: an
// inline policy has none, and a stored one keeps it beside.
nlohmann::json policy_to_json(const EgressPolicy& policy);

// Absent or null keys take the config defaults. Errors as for service_from_json.
std::optional<EgressPolicy> policy_from_json(const nlohmann::json& j, std::string* error);

// The text a rule was written as, normalised: "api.example.com",
// "*.example.com:8443". DomainRule::parse of it gives the rule back.
std::string domain_rule_text(const DomainRule& rule);

// "10.0.0.0/8", "fd00::/8", "192.0.2.1/32"; parse_cidr of it gives the CIDR back.
std::string cidr_text(const Cidr& cidr);

}  // namespace vaultgate
