#pragma once
// The vault store: the data of state/store.hpp kept encrypted at rest
// (AES-256-GCM under a key derived from the master key) and written
// atomically, guarded against an older copy being put back, and the master
// key it is opened with. No Asio here.
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace vaultgate {

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

// A shared store (store.url) that keeps a local snapshot for a start while
// its database cannot be reached (docs/reference/configuration.md, "store").
// Its age is that of the file's time: the last write, or the last refresh
// that found the database still holding what was written.
struct LocalSnapshotOptions {
    std::string path;  // a file store: same format, same key
    // A copy of the data is handed to the snapshot's writer thread at most
    // this often, when something changed.
    std::chrono::milliseconds interval = std::chrono::seconds(10);
    // A snapshot whose file is older than this is not served: it could bring
    // back revoked sessions and replaced credentials.
    std::chrono::milliseconds max_age = std::chrono::hours(24);
    // Called on the writer's thread after each write or confirmation it
    // attempted (for tests and metrics); may be empty.
    std::function<void()> on_written;
};
// Opens the shared store; throws StoreUnavailable while it cannot be reached.
using OpenSharedStore = std::function<std::unique_ptr<VaultStore>()>;
// The shared store opened with `open_shared` on first use. load() falls back
// to the snapshot when the database cannot be reached (StoreError when there
// is none, or it is older than max_age); the replica then serves it with
// available() false and refuses writes (StoreUnavailable) until a refresh has
// read the database whole. Throws StoreError when the path is empty.
std::unique_ptr<VaultStore> with_local_snapshot(OpenSharedStore open_shared, const Secret& master_key,
                                                LocalSnapshotOptions options);

// The master key, from the first source that is set: `master_key_file` (exactly
// 32 raw bytes), else env VAULTGATE_MASTER_KEY (base64 of 32 bytes), else
// $CREDENTIALS_DIRECTORY/master-key (32 raw bytes, or base64 of 32 bytes with an
// optional trailing newline). Throws StoreError naming the source; never with
// any of the key's bytes in the message.
Secret load_master_key(const std::optional<std::string>& master_key_file);

}  // namespace vaultgate
