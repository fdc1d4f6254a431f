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

// Where the data lives. One implementation today (an encrypted file); the
// interface leaves room for a backend shared by several replicas.
class VaultStore {
public:
    virtual ~VaultStore() = default;
    // The saved data; empty data (generation 0) when nothing was ever saved.
    // Throws StoreError when the store exists but cannot be read or trusted.
    virtual StoreData load() = 0;
    // Replaces the saved data as a whole: after a crash, load() sees either the
    // old or the new data, never a mix. Throws StoreError.
    virtual void save(const StoreData& data) = 0;
    // For messages: "encrypted file store /var/lib/vaultgate/vaultgate.db".
    virtual std::string describe() const = 0;
};

}  // namespace vaultgate
