#pragma once
// How an admin command reaches the admin API: the options every admin command
// (vault, session, logs, bootstrap, explain) takes, declared once here.
//
// Each setting is taken from, first to last: the option (--admin,
// --token-file), the environment ($VAULTGATE_ADMIN,
// $VAULTGATE_ADMIN_TOKEN_FILE), the server's config file given with --config
// (listen.admin, admin.token_file), the default (http://127.0.0.1:3190, no
// token).
#include "cli/admin_client.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace vaultgate::cli {

struct AdminConnection {
    std::string admin;       // --admin URL
    std::string token_file;  // --token-file FILE
    std::string config;      // --config FILE, the server's config
};

// Adds --admin, --token-file and --config to `command`.
void add_admin_options(CLI::App& command, AdminConnection& connection);

// The client for the settings above; reads the token file (an
// AdminTokenError when it is wrong) and the config file (a UsageError naming
// file:line:col when it is not valid).
AdminClient open_admin(const AdminConnection& connection);

}  // namespace vaultgate::cli
