#include "schema.hpp"

#include <string>

namespace vaultgate::pg {

namespace {

// Every table carries `row_version`, the change version that last wrote the
// row, so a replica reads only what changed since the version it has; a
// deletion leaves a row in vaultgate_removals for the same purpose. `seq`
// keeps the order in which things were made.
constexpr const char* migration_1 = R"sql(
CREATE TABLE vaultgate_vaults (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  created_at_ms bigint NOT NULL,
  row_version bigint NOT NULL,
  seq bigserial);
CREATE TABLE vaultgate_credentials (
  vault_id text NOT NULL REFERENCES vaultgate_vaults(id) ON DELETE CASCADE,
  name text NOT NULL,
  sealed_value text NOT NULL,
  version bigint NOT NULL,
  updated_at_ms bigint NOT NULL,
  row_version bigint NOT NULL,
  seq bigserial,
  PRIMARY KEY (vault_id, name));
CREATE TABLE vaultgate_services (
  id text PRIMARY KEY,
  vault_id text NOT NULL REFERENCES vaultgate_vaults(id) ON DELETE CASCADE,
  config text NOT NULL,
  row_version bigint NOT NULL,
  seq bigserial);
CREATE TABLE vaultgate_sessions (
  id text PRIMARY KEY,
  token_digest text NOT NULL UNIQUE,
  vault_ids text NOT NULL,
  policy text NOT NULL,
  policy_name text NOT NULL,
  expires_at_ms bigint NOT NULL,
  source text,
  created_at_ms bigint NOT NULL,
  row_version bigint NOT NULL,
  seq bigserial);
CREATE TABLE vaultgate_removals (
  version bigint NOT NULL,
  kind text NOT NULL,
  vault_id text NOT NULL,
  key text NOT NULL);
CREATE INDEX ON vaultgate_vaults (row_version);
CREATE INDEX ON vaultgate_credentials (row_version);
CREATE INDEX ON vaultgate_services (row_version);
CREATE INDEX ON vaultgate_sessions (row_version);
CREATE INDEX ON vaultgate_removals (version);
)sql";

// Removals carry their time so that old ones can be pruned; the meta row
// keeps the highest version pruned, below which a replica reads everything
// again instead of the removals since its version.
constexpr const char* migration_2 = R"sql(
ALTER TABLE vaultgate_removals ADD COLUMN removed_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX ON vaultgate_removals (removed_at);
ALTER TABLE vaultgate_meta ADD COLUMN removals_pruned_through bigint NOT NULL DEFAULT 0;
)sql";

constexpr const char* migrations[] = {migration_1, migration_2};

}  // namespace

void migrate_schema(Connection& conn) {
    conn.transaction("BEGIN", [&] {
        // One key for vaultgate's schema: the bytes of "vaultgat".
        conn.exec("waiting for the schema lock", "SELECT pg_advisory_xact_lock(8530228277886280052)");
        conn.exec("creating the schema table",
                  "CREATE TABLE IF NOT EXISTS vaultgate_meta ("
                  " singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),"
                  " schema_version integer NOT NULL,"
                  " change_version bigint NOT NULL)");
        conn.exec("creating the schema table",
                  "INSERT INTO vaultgate_meta (schema_version, change_version) VALUES (0, 0) ON CONFLICT DO NOTHING");
        const auto current = conn.exec("reading the schema version", "SELECT schema_version FROM vaultgate_meta");
        const long long found = current.number(0, 0);
        if (found > schema_version)
            throw StoreError("database: the schema is version " + std::to_string(found) +
                             ", newer than this vaultgate knows (" + std::to_string(schema_version) +
                             "); upgrade vaultgate");
        for (long long v = found; v < schema_version; ++v)
            conn.exec_script("migrating the schema to version " + std::to_string(v + 1), migrations[v]);
        conn.exec("recording the schema version", "UPDATE vaultgate_meta SET schema_version = $1",
                  {std::to_string(schema_version)});
    });
}

}  // namespace vaultgate::pg
