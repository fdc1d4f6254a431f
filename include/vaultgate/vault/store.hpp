#pragma once
// The vault store: vaults, credentials, services and sessions made through the
// admin API, kept encrypted at rest (AES-256-GCM under a key derived from the
// master key) and written atomically. Plain data in, plain data out; callers
// build GatewayState from it. No Asio here.
#include "vaultgate/egress/address.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/egress/policy.hpp"
#include "vaultgate/util/secret.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;  // the message names the store's path
};

struct StoredCredential {
    std::string name;
    Secret value;
    std::uint64_t version = 1;        // 1 when created, +1 per rotation
    std::int64_t updated_at_ms = 0;   // Unix time
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
    std::string token_digest;         // token_digest(token); the token itself is never stored
    std::vector<std::string> vault_ids;
    EgressPolicy policy;              // its name is kept too
    std::int64_t expires_at_ms = 0;
    std::optional<Cidr> source;       // clients allowed to use the session, when narrowed
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

// The file store at `path`. The master key must be 32 bytes (StoreError
// otherwise); the store keeps only keys derived from it. Nothing is read or
// written until load() or save().
//
// File layout (all of it authenticated; the header is the AAD):
//   magic "VGSTORE\0" (8) | format version 1 (1) | nonce (12) |
//   ciphertext length, big endian (8) | AES-256-GCM ciphertext | tag (16)
// The plaintext is a JSON document holding everything, credential values included.
std::unique_ptr<VaultStore> open_file_store(const std::string& path, const Secret& master_key);

// `store` guarded against rollback: load() refuses data whose generation is
// below the one recorded in `record_path` (the highest seen), unless
// `allow_rollback`; a missing record is created. Every load and save records
// the generation (atomically, mode 0600), and save() refuses a generation
// that does not rise above the last one loaded or saved. Throws StoreError.
std::unique_ptr<VaultStore> guard_against_rollback(std::unique_ptr<VaultStore> store, const std::string& record_path,
                                                   bool allow_rollback);

// Where serve keeps the record for the store at `store_path`: beside it,
// "<store_path>.generation".
std::string generation_record_path(const std::string& store_path);

// The master key, from the first source that is set: `master_key_file` (exactly
// 32 raw bytes), else env VAULTGATE_MASTER_KEY (base64 of 32 bytes), else
// $CREDENTIALS_DIRECTORY/master-key (32 raw bytes, or base64 of 32 bytes with an
// optional trailing newline). Throws StoreError naming the source; never with
// any of the key's bytes in the message.
Secret load_master_key(const std::optional<std::string>& master_key_file);

// "hmac-sha256:" + 16 hex digits: HMAC-SHA256 of the value under a key derived
// from the master key. Stable across restarts, so an operator can tell whether a
// rotation changed anything, and useless for guessing the value without the key.
std::string credential_fingerprint(const Secret& master_key, std::string_view value);

// Lower-case hex SHA-256, for session tokens at rest.
std::string token_digest(std::string_view token);

// Compares without a data-dependent early exit; only the lengths may leak.
bool constant_time_equal(std::string_view a, std::string_view b);

// prefix + 20 random base32 characters (100 bits), e.g. "vlt_k3q...".
std::string random_id(std::string_view prefix);

// 32 random bytes, base64url without padding (43 characters).
std::string random_token();

}  // namespace vaultgate
