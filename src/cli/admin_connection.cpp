#include "cli/admin_connection.hpp"

#include "vaultgate/config/config.hpp"
#include "vaultgate/credentials/admin_token.hpp"

#include <cstdlib>
#include <optional>

namespace vaultgate::cli {

namespace {

std::optional<std::string> from_env(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
}

// "unix:/run/vaultgate/admin.sock" or "http://127.0.0.1:3190" for listen.admin.
std::string admin_url(const ListenAddress& listen) {
    if (listen.is_unix()) return "unix:" + listen.unix_path;
    // A server listening on every address is reached on loopback.
    std::string host = listen.host == "0.0.0.0" ? "127.0.0.1" : listen.host == "::" ? "::1" : listen.host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    return "http://" + host + ":" + std::to_string(listen.port);
}

}  // namespace

void add_admin_options(CLI::App& command, AdminConnection& connection) {
    command.add_option("--admin", connection.admin, "The admin API: http://HOST:PORT or unix:PATH")
        ->type_name("URL")
        ->group("Admin connection");
    command.add_option("--token-file", connection.token_file, "The file holding the admin token")
        ->type_name("FILE")
        ->group("Admin connection");
    command.add_option("--config", connection.config, "Take listen.admin and admin.token_file from this server config")
        ->type_name("FILE")
        ->group("Admin connection");
}

AdminClient open_admin(const AdminConnection& connection) {
    std::optional<std::string> url =
        connection.admin.empty() ? from_env("VAULTGATE_ADMIN") : std::optional<std::string>(connection.admin);
    std::optional<std::string> token_file = connection.token_file.empty()
                                                ? from_env("VAULTGATE_ADMIN_TOKEN_FILE")
                                                : std::optional<std::string>(connection.token_file);
    if (!connection.config.empty() && (!url || !token_file)) {
        Config config;
        try {
            config = load_config_file(connection.config);
        } catch (const ConfigError& e) {
            throw UsageError(std::string("--config: ") + e.what());
        }
        if (!url) url = admin_url(config.listen_admin);
        if (!token_file) token_file = config.admin_token_file;
    }
    std::optional<Secret> token;
    if (token_file) {
        std::string text = read_admin_token_file(*token_file, "token file");
        token.emplace(std::move(text));
        wipe_string(text);
    }
    return AdminClient(parse_admin_url(url.value_or("http://127.0.0.1:3190")), std::move(token));
}

}  // namespace vaultgate::cli
