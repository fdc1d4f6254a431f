#pragma once
// The database schema, versioned: each migration runs once, all of them in
// one transaction under an advisory lock, so replicas that start together
// all come up with the same schema.
#include "pg_connection.hpp"

namespace vaultgate::pg {

inline constexpr int schema_version = 2;

// Creates or migrates the schema. Throws StoreError when the database has a
// newer schema than this vaultgate knows, StoreUnavailable when it is out of reach.
void migrate_schema(Connection& conn);

}  // namespace vaultgate::pg
