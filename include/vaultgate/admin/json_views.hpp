#pragma once
// How the admin API renders its data: vaults with their credentials (names,
// versions and fingerprints, never values) and services, sessions (never their
// tokens), the answer to a new session, and access log entries.
#include "vaultgate/admin/catalog.hpp"
#include "vaultgate/observe/access_log.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate::admin {

// RFC 3339 in UTC; milliseconds only when there are some, so whole-second
// instants such as expires_at read plainly.
std::string rfc3339(std::int64_t ms);

nlohmann::ordered_json service_json(const std::string& id, const ServiceConfig& config);

nlohmann::ordered_json api_vault_json(const StoredVault& vault, const Secret& master_key);

// Config credentials have no history: version 1, as of the last (re)load.
nlohmann::ordered_json config_vault_json(const VaultConfig& vault, const Catalog& catalog);

// "http://127.0.0.1:3128" -> "http://<id>:<token>@127.0.0.1:3128". The id and
// token are from URL-safe alphabets, so they need no escaping.
std::string session_proxy_url(std::string_view base, std::string_view id, std::string_view token);

// The answer to POST /v1/sessions: id, token, expiry, proxy URL, the proxy
// environment for a sandbox and the CA to trust. The caller wipes its strings.
nlohmann::ordered_json new_session_json(const StoredSession& session, const std::string& token,
                                        const std::string& proxy_url, const std::string& ca_cert_pem);

// A session as GET /v1/sessions shows it: id, origin, vaults (id and name),
// egress policy, source range and times. Never the token or its digest.
nlohmann::ordered_json api_session_json(const StoredSession& session, const Catalog& catalog);
nlohmann::ordered_json config_session_json(const std::string& id, const SessionConfig& session);

// {"entries": [...]}, each entry in the access log's own line format.
nlohmann::ordered_json log_entries_json(const std::vector<const AccessLogEntry*>& entries);

}  // namespace vaultgate::admin
