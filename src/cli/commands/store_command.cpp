// `vaultgate store migrate`: a file store copied into a database.
#include "cli/command_tree.hpp"
#include "cli/commands.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/pgstore/pg_store.hpp"
#include "vaultgate/vault/store.hpp"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace vaultgate::cli {

namespace {

struct MigrateOptions {
    std::string from;
    std::string to;
    std::optional<std::string> master_key_file;
};

int migrate(const MigrateOptions& options) {
    if (auto problem = store_url_problem(options.to)) throw UsageError("--to: " + *problem);
    // The key is found as `serve` finds it: the option, the environment, then
    // the systemd credential.
    const Secret master_key = load_master_key(options.master_key_file);
    const StoreData data = open_file_store(options.from, master_key)->load();
    open_pg_store(options.to, master_key)->save(data);
    std::size_t credentials = 0, services = 0;
    for (const auto& v : data.vaults) credentials += v.credentials.size(), services += v.services.size();
    std::printf("copied %zu vaults, %zu credentials, %zu services and %zu sessions into the database\n",
                data.vaults.size(), credentials, services, data.sessions.size());
    return 0;
}

}  // namespace

void add_store_command(CLI::App& root, CommandRun& run) {
    CLI::App* store = root.add_subcommand("store", "Manage the store");
    store->require_subcommand(1);
    auto options = std::make_shared<MigrateOptions>();
    CLI::App* cmd = store->add_subcommand(
        "migrate", "Copy a file store into a PostgreSQL database (empty, its schema created or migrated)");
    cmd->add_option("--from", options->from, "The file store (store.path)")->required()->type_name("FILE");
    cmd->add_option("--to", options->to, "The database (store.url); no password in it")->required()->type_name("URL");
    cmd->add_option("--master-key-file", options->master_key_file,
                    "32 raw bytes; else VAULTGATE_MASTER_KEY, else $CREDENTIALS_DIRECTORY/master-key")
        ->type_name("FILE");
    cmd->callback([options, &run] { run = [options] { return migrate(*options); }; });
}

}  // namespace vaultgate::cli
