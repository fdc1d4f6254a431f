#pragma once
// StoreData <-> table rows: what one change writes, and what a replica reads
// back since the version it has.
#include "pg_connection.hpp"
#include "vaultgate/vault/sealed_value.hpp"

#include <cstdint>
#include <string>

namespace vaultgate::pg {

// The context a credential value is sealed to: its vault and name.
std::string credential_context(std::string_view vault_id, std::string_view name);

// Applies to `data` every row written and every removal recorded after
// version `since`, in a transaction the caller has opened; 0 reads all.
// `changes`, when given, gets one StoreChange per row.
void read_changes(Connection& conn, const ValueSealer& sealer, std::int64_t since, StoreData& data,
                  std::vector<StoreChange>* changes = nullptr);

// Writes one row as it is in `data`, stamped with `version` (insert or replace).
void write_vault(Connection& conn, const StoredVault& vault, std::int64_t version);
void write_credential(Connection& conn, const ValueSealer& sealer, const std::string& vault_id,
                      const StoredCredential& credential, std::int64_t version);
void write_service(Connection& conn, const std::string& vault_id, const StoredService& service, std::int64_t version);
void write_session(Connection& conn, const StoredSession& session, std::int64_t version);

}  // namespace vaultgate::pg
