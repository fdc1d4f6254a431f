// The database store: one transaction per change, which raises the change
// version (the row lock on vaultgate_meta orders writers, so a version seen
// means every lower one is committed), stamps the rows it writes with it,
// records removals, and announces the version with NOTIFY at commit.
#include "vaultgate/pgstore/pg_store.hpp"

#include "pg_connection.hpp"
#include "rows.hpp"
#include "schema.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace vaultgate {

namespace {

using pg::Connection;

const StoredVault& vault_in(const StoreData& data, const std::string& id) {
    for (const auto& v : data.vaults)
        if (v.id == id) return v;
    throw std::logic_error("store change names a vault that is not in the data");
}

// From the back: the item a change adds was just appended.
template <class T>
const T& item_in(const std::vector<T>& items, const std::string& key, std::string T::*field) {
    for (auto it = items.rbegin(); it != items.rend(); ++it)
        if ((*it).*field == key) return *it;
    throw std::logic_error("store change names an item that is not in the data");
}

// A unique key taken by another replica first, in the admin API's terms.
StoreConflict conflict_for(const StoreChange& change) {
    switch (change.kind) {
        case StoreChange::Kind::add_vault:
            return {"name_taken", "a vault of this name was made through another replica"};
        case StoreChange::Kind::add_credential:
            return {"credential_exists",
                    "credential '" + change.key + "' was made through another replica; rotate it with PUT"};
        default:
            return {"conflict", "the change conflicts with one made through another replica; read again and retry"};
    }
}

// Runs `body`, keeping `available` up to date. After a lost connection the
// transaction is gone with it; the next call connects again.
template <class F>
auto guarded(std::atomic<bool>& available, F&& body) {
    try {
        if constexpr (std::is_void_v<decltype(body())>) {
            body();
            available = true;
        } else {
            auto out = body();
            available = true;
            return out;
        }
    } catch (const StoreUnavailable&) {
        available = false;
        throw;
    }
}

class PgStore final : public VaultStore {
public:
    PgStore(const std::string& url, const Secret& master_key, PgStoreOptions options)
        : conn_(url), sealer_(master_key), options_(options) {
        guarded(available_, [&] { pg::migrate_schema(conn_); });
    }

    StoreData load() override {
        StoreData data;
        guarded(available_, [&] {
            conn_.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [&] {
                data.generation = current_version();
                pg::read_changes(conn_, sealer_, 0, data);
            });
        });
        return data;
    }

    bool refresh(StoreData& data, Refresh* read) override {
        return guarded(available_, [&] {
            prune_removals_when_due();
            return conn_.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [&] {
                const auto meta = conn_.exec("reading the change version",
                                             "SELECT change_version, removals_pruned_through FROM vaultgate_meta");
                const auto version = meta.number(0, 0);
                const auto pruned = static_cast<std::uint64_t>(meta.number(0, 1));
                if (static_cast<std::uint64_t>(version) == data.generation) return false;
                if (static_cast<std::uint64_t>(version) < data.generation || data.generation < pruned) {
                    // The database was replaced by an older one, or removals
                    // this replica has not seen were pruned: read it whole,
                    // apart, so that a failure leaves `data` as it was.
                    StoreData whole;
                    pg::read_changes(conn_, sealer_, 0, whole);
                    data = std::move(whole);
                    if (read) read->whole = true;
                } else {
                    // In place: rows apply by key, so after a failure the
                    // next read (from the same version) puts it right.
                    pg::read_changes(conn_, sealer_, static_cast<std::int64_t>(data.generation), data,
                                     read ? &read->changes : nullptr);
                }
                data.generation = version;
                return true;
            });
        });
    }

    std::uint64_t apply(const StoreChange& change, const StoreData& next) override {
        return guarded(available_, [&] {
            return conn_.transaction("BEGIN", [&]() -> std::uint64_t {
                const auto version = next_version();
                try {
                    if (!write(change, next, version)) {
                        // Nothing to do (another replica did it): no new version.
                        conn_.rollback();
                        return current_version_outside();
                    }
                } catch (const StoreConflict& e) {
                    if (e.code != "conflict") throw;
                    throw conflict_for(change);
                }
                conn_.exec("announcing the change", "SELECT pg_notify($1, $2)",
                           {std::string(pg_change_channel), std::to_string(version)});
                return static_cast<std::uint64_t>(version);
            });
        });
    }

    // `store migrate`: the whole data into a database that holds none yet.
    void save(const StoreData& data) override {
        guarded(available_, [&] {
            conn_.transaction("BEGIN", [&] {
                const auto version = next_version();
                const auto held = conn_.exec("counting rows",
                                             "SELECT (SELECT count(*) FROM vaultgate_vaults) +"
                                             " (SELECT count(*) FROM vaultgate_sessions)");
                if (held.number(0, 0) != 0)
                    throw StoreError("database: it already holds vaults or sessions; copy into an empty database");
                for (const auto& vault : data.vaults) {
                    pg::write_vault(conn_, vault, version);
                    for (const auto& c : vault.credentials) pg::write_credential(conn_, sealer_, vault.id, c, version);
                    for (const auto& s : vault.services) pg::write_service(conn_, vault.id, s, version);
                }
                for (const auto& s : data.sessions) pg::write_session(conn_, s, version);
                conn_.exec("announcing the change", "SELECT pg_notify($1, $2)",
                           {std::string(pg_change_channel), std::to_string(version)});
            });
        });
    }

    std::string describe() const override { return "PostgreSQL store"; }

    bool available() const override { return available_.load(); }

private:
    // Deletes the removals older than the retention, and records the highest
    // version deleted (in one statement, so that no replica sees one without
    // the other).
    void prune_removals_when_due() {
        const auto now = std::chrono::steady_clock::now();
        const auto every = std::min<std::chrono::milliseconds>(options_.removals_retention, std::chrono::hours(1));
        if (last_prune_ && now - *last_prune_ < every) return;
        conn_.exec("pruning old removals",
                   "WITH gone AS (DELETE FROM vaultgate_removals"
                   " WHERE removed_at < now() - $1::bigint * interval '1 millisecond' RETURNING version)"
                   " UPDATE vaultgate_meta SET removals_pruned_through ="
                   " GREATEST(removals_pruned_through, (SELECT max(version) FROM gone))",
                   {std::to_string(options_.removals_retention.count())});
        last_prune_ = now;
    }

    std::int64_t current_version() {
        return conn_.exec("reading the change version", "SELECT change_version FROM vaultgate_meta").number(0, 0);
    }
    // After a ROLLBACK: outside any transaction.
    std::uint64_t current_version_outside() { return static_cast<std::uint64_t>(current_version()); }

    std::int64_t next_version() {
        return conn_
            .exec("raising the change version",
                  "UPDATE vaultgate_meta SET change_version = change_version + 1 RETURNING change_version")
            .number(0, 0);
    }

    void record_removal(const char* kind, const std::string& vault_id, const std::string& key, std::int64_t version) {
        conn_.exec("recording a removal",
                   "INSERT INTO vaultgate_removals (version, kind, vault_id, key) VALUES ($1, $2, $3, $4)",
                   {std::to_string(version), std::string(kind), vault_id, key});
    }

    // One change's rows. False when it found nothing to change.
    bool write(const StoreChange& change, const StoreData& next, std::int64_t version) {
        using Kind = StoreChange::Kind;
        const std::string v = std::to_string(version);
        switch (change.kind) {
            case Kind::add_vault:
                pg::write_vault(conn_, vault_in(next, change.vault_id), version);
                return true;
            case Kind::remove_vault: {
                const auto r =
                    conn_.exec("removing a vault", "DELETE FROM vaultgate_vaults WHERE id = $1", {change.vault_id});
                if (r.affected() == 0) return false;
                record_removal("vault", change.vault_id, change.vault_id, version);
                return true;
            }
            case Kind::add_credential: {
                const auto& vault = vault_in(next, change.vault_id);
                pg::write_credential(conn_, sealer_, vault.id,
                                     item_in(vault.credentials, change.key, &StoredCredential::name), version);
                return true;
            }
            case Kind::rotate_credential: {
                const auto& vault = vault_in(next, change.vault_id);
                const auto& c = item_in(vault.credentials, change.key, &StoredCredential::name);
                // Compare-and-set: only the version this replica read is replaced.
                const auto r =
                    conn_.exec("rotating a credential",
                               "UPDATE vaultgate_credentials SET sealed_value = $3, version = $4, updated_at_ms = $5, "
                               "row_version = $6"
                               " WHERE vault_id = $1 AND name = $2 AND version = $7",
                               {vault.id, c.name, sealer_.seal(c.value, pg::credential_context(vault.id, c.name)),
                                std::to_string(c.version), std::to_string(c.updated_at_ms), v,
                                std::to_string(change.expected_version)});
                if (r.affected() == 0)
                    throw StoreConflict("version_conflict", "credential '" + c.name +
                                                                "' was rotated or deleted through another replica; "
                                                                "read it again and retry");
                return true;
            }
            case Kind::remove_credential: {
                const auto r = conn_.exec("removing a credential",
                                          "DELETE FROM vaultgate_credentials WHERE vault_id = $1 AND name = $2",
                                          {change.vault_id, change.key});
                if (r.affected() == 0) return false;
                record_removal("credential", change.vault_id, change.key, version);
                return true;
            }
            case Kind::add_service: {
                const auto& vault = vault_in(next, change.vault_id);
                pg::write_service(conn_, vault.id, item_in(vault.services, change.key, &StoredService::id), version);
                return true;
            }
            case Kind::remove_service: {
                const auto r =
                    conn_.exec("removing a service", "DELETE FROM vaultgate_services WHERE id = $1", {change.key});
                if (r.affected() == 0) return false;
                record_removal("service", change.vault_id, change.key, version);
                return true;
            }
            case Kind::add_session:
                pg::write_session(conn_, item_in(next.sessions, change.key, &StoredSession::id), version);
                return true;
            case Kind::remove_sessions: {
                bool any = false;
                for (const auto& id : change.keys) {
                    const auto r =
                        conn_.exec("removing a session", "DELETE FROM vaultgate_sessions WHERE id = $1", {id});
                    if (r.affected() == 0) continue;
                    record_removal("session", "", id, version);
                    any = true;
                }
                return any;
            }
        }
        return false;
    }

    Connection conn_;
    ValueSealer sealer_;
    PgStoreOptions options_;
    std::optional<std::chrono::steady_clock::time_point> last_prune_;
    std::atomic<bool> available_ = true;
};

}  // namespace

std::unique_ptr<VaultStore> open_pg_store(const std::string& url, const Secret& master_key, PgStoreOptions options) {
    return std::make_unique<PgStore>(url, master_key, options);
}

}  // namespace vaultgate
