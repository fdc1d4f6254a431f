#pragma once
// What the admin API keeps: vaults, credentials, services and sessions, as
// plain data, and the interface of the store that saves them. The encrypted
// file store (vault/store.hpp) is one implementation. No Asio here.
#include "vaultgate/config/config.hpp"
#include "vaultgate/egress/address.hpp"
#include "vaultgate/egress/policy.hpp"
#include "vaultgate/util/secret.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vaultgate {

class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;  // the message names the store's path
};

// The store cannot be reached now (a database that is down); the data in
// memory stays as it was and a later call may succeed.
class StoreUnavailable : public StoreError {
public:
    using StoreError::StoreError;
};

// Another writer changed the same thing first (a shared store): `code` is the
// admin API's error code (e.g. "version_conflict"), the message names no value.
class StoreConflict : public StoreError {
public:
    StoreConflict(std::string code, const std::string& message) : StoreError(message), code(std::move(code)) {}
    std::string code;
};

struct StoredCredential {
    std::string name;
    Secret value;
    std::uint64_t version = 1;       // 1 when created, +1 per rotation
    std::int64_t updated_at_ms = 0;  // Unix time
};

struct StoredService {
    std::string id;
    ServiceConfig config;
};

struct StoredVault {
    std::string id;
    std::string name;
    std::int64_t created_at_ms = 0;
    std::vector<StoredCredential> credentials;
    std::vector<StoredService> services;
};

struct StoredSession {
    std::string id;
    std::string token_digest;  // token_digest(token) (crypto/digest.hpp); the token itself is never stored
    std::vector<std::string> vault_ids;
    EgressPolicy policy;  // its name is kept too
    std::int64_t expires_at_ms = 0;
    std::optional<Cidr> source;  // clients allowed to use the session, when narrowed
    std::int64_t created_at_ms = 0;  // 0: stored before the creation time was kept
};

struct StoreData {
    std::vector<StoredVault> vaults;
    std::vector<StoredSession> sessions;
    // The writer's counter, saved as given inside the encrypted payload; the
    // admin API raises it by one per save. 0 for a new store, and for stores
    // written before it was kept.
    std::uint64_t generation = 0;
};

// One change the admin API makes, named by its keys; the values are in the
// data handed to VaultStore::apply beside it.
struct StoreChange {
    enum class Kind {
        add_vault,
        remove_vault,
        add_credential,
        rotate_credential,  // compare-and-set: `expected_version` is the version replaced
        remove_credential,
        add_service,
        remove_service,
        add_session,
        remove_sessions,  // `keys`: the session ids (deleted or expired)
    };
    StoreChange(Kind kind, std::string vault_id = {}, std::string key = {})
        : kind(kind), vault_id(std::move(vault_id)), key(std::move(key)) {}
    Kind kind;
    std::string vault_id;
    std::string key;  // the credential's name, the service's id, the session's id
    std::vector<std::string> keys;
    std::uint64_t expected_version = 0;
};

// Where the data lives: an encrypted file (vault/store.hpp) or a database
// shared by several replicas (pgstore/pg_store.hpp).
class VaultStore {
public:
    virtual ~VaultStore() = default;
    // The saved data; empty data (generation 0) when nothing was ever saved.
    // Throws StoreError when the store exists but cannot be read or trusted.
    virtual StoreData load() = 0;
    // Replaces the saved data as a whole: after a crash, load() sees either the
    // old or the new data, never a mix. Throws StoreError.
    virtual void save(const StoreData& data) = 0;
    // Saves one change; `next` is the whole data after it, its generation one
    // above the data it was made from. Returns the generation the store has
    // now: above next.generation when another writer changed the store in
    // between (call refresh() to catch up). Throws StoreError,
    // StoreUnavailable, StoreConflict. A file has one writer and saves `next`
    // whole.
    virtual std::uint64_t apply(const StoreChange& change, const StoreData& next) {
        save(next);
        return next.generation;
    }
    // Brings `data` up to the store's current state (changes made by other
    // writers since data.generation), in place. Returns false when nothing
    // changed. `read`, when given, gets what changed as StoreChanges (their
    // keys; the values are in `data`), or `whole` when the store was read
    // whole. Throws StoreUnavailable; `data` may then hold part of the
    // changes under its old generation, which the next refresh reads again
    // (every change applies by key).
    struct Refresh {
        bool whole = false;
        std::vector<StoreChange> changes;
    };
    virtual bool refresh(StoreData& data, Refresh* read = nullptr) { return false; }
    // False while the store cannot be reached (what /readyz reports).
    virtual bool available() const { return true; }
    // For messages: "encrypted file store /var/lib/vaultgate/vaultgate.db".
    virtual std::string describe() const = 0;
};

}  // namespace vaultgate
