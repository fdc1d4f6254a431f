#pragma once
// The store in PostgreSQL, shared by several replicas (docs/reference/
// configuration.md, "store"): one row per vault, credential, service and
// session; credential values sealed under the master key before they reach
// the database (vault/sealed_value.hpp); session tokens as digests. Each
// change is one transaction that raises a change version and sends it with
// NOTIFY; a replica reads what changed since the version it has. libpq only,
// no Asio.
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace vaultgate {

struct PgStoreOptions {
    // How long the record of a removal is kept for replicas that are behind
    // (store.removals_retention). Older ones are deleted by refresh() at most
    // once per min(retention, 1 h); a replica further behind than that reads
    // the whole store again instead of the removals since its version.
    std::chrono::milliseconds removals_retention = std::chrono::hours(168);
};

// Connects to `url`, creates or migrates the schema, and returns the store.
// Throws StoreUnavailable when the database cannot be reached, StoreError
// otherwise (a wrong master key shows at load()).
std::unique_ptr<VaultStore> open_pg_store(const std::string& url, const Secret& master_key,
                                          PgStoreOptions options = {});

// The NOTIFY channel each change is announced on, its payload the version.
inline constexpr const char* pg_change_channel = "vaultgate_changes";

// A thread holding its own connection that LISTENs for changes and calls
// `on_change` for each announcement, every `fallback` without one (a lost
// notification), when the connection is lost, and after each reconnection
// (to catch up). Reconnects with a backoff that doubles up to 5 s.
class PgChangeListener {
public:
    PgChangeListener(std::string url, std::function<void()> on_change, std::chrono::milliseconds fallback);
    ~PgChangeListener();  // stops and joins the thread
    PgChangeListener(const PgChangeListener&) = delete;
    PgChangeListener& operator=(const PgChangeListener&) = delete;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vaultgate
