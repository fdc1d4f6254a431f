// The pre-flight's file checks: the CA pair, the upstream trust file, the
// store, the admin token, the access log and credential files, each as `serve`
// will use it, so that a mistake is reported with its place before serving.
#include "preflight_checks.hpp"

#include "vaultgate/credentials/admin_token.hpp"
#include "vaultgate/crypto/ca.hpp"
#include "vaultgate/util/secret.hpp"
#include "vaultgate/util/unique_fd.hpp"
#include "vaultgate/vault/store.hpp"

#include <boost/asio/ssl/context.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace vaultgate::preflight {

namespace {

void add(Findings& out, std::string key, std::string message) {
    out.push_back(PreflightFinding{PreflightFinding::Severity::error, std::move(key), std::move(message), {}});
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// systemd hands LoadCredential= files over with mode 0440 in a directory
// only the service can enter, so group read there opens them to no one else.
bool in_credentials_directory(const std::string& path) {
    const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
    if (dir == nullptr || *dir == '\0') return false;
    std::error_code ec;
    const auto parent = std::filesystem::weakly_canonical(path, ec).parent_path();
    if (ec) return false;
    const auto credentials = std::filesystem::weakly_canonical(dir, ec);
    return !ec && parent == credentials;
}

// Private keys and tokens: like ssh with a private key, refused when the
// group or others have any access to them (but group read of a systemd
// credential).
std::optional<std::string> open_to_others(const std::string& path) {
    struct stat st {};
    const mode_t forbidden = in_credentials_directory(path) ? 037 : 077;
    if (::stat(path.c_str(), &st) != 0 || (st.st_mode & forbidden) == 0) return std::nullopt;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return path + " is open to group or others (mode " + mode + "); it must be readable by its owner only: chmod 600 " +
           path;
}

// The nearest directory of `dir` and its parents that exists: where `serve`
// would create the rest.
std::string nearest_existing(std::filesystem::path dir) {
    while (!dir.empty() && !exists(dir.string()) && dir.has_relative_path()) dir = dir.parent_path();
    return dir.empty() ? "." : dir.string();
}

void check_private_file(const std::string& key, const std::string& path, Findings& out, bool regular_only = true) {
    if (auto why = unreadable(path, regular_only))
        add(out, key, *why);
    else if (auto open = open_to_others(path))
        add(out, key, *open);
}

void check_upstream_ca(const Config& config, Findings& out) {
    if (config.upstream_ca_file == "system") return;
    if (auto why = unreadable(config.upstream_ca_file, true)) return add(out, "upstream.ca_file", *why);
    // The load `serve` makes: at least one PEM certificate.
    boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
    boost::system::error_code ec;
    ctx.load_verify_file(config.upstream_ca_file, ec);
    if (ec) add(out, "upstream.ca_file", "cannot load " + config.upstream_ca_file + ": " + ec.message());
}

// A file vaultgate writes: its directory must take it, and one that is there
// must be readable.
void check_store_file(const char* key, const std::string& path, Findings& out) {
    auto why = unwritable_directory(directory_of(path));
    if (!why && exists(path)) why = unreadable(path, true);
    if (why) add(out, key, *why);
}

void check_store(const Config& config, Findings& out) {
    // A first start creates the store. A database store is reached at start,
    // not checked here; its local snapshot is.
    if (!config.store_url)
        check_store_file("store.path", config.store_path, out);
    else if (config.store_snapshot_path)
        check_store_file("store.snapshot_path", *config.store_snapshot_path, out);
    if (!config.store_master_key_file) return;
    const auto& key_file = *config.store_master_key_file;
    const auto before = out.size();
    check_private_file("store.master_key_file", key_file, out);
    if (out.size() != before) return;
    try {
        Secret key = load_master_key(key_file);
    } catch (const StoreError& e) {
        add(out, "store.master_key_file", e.what());
    }
}

void check_admin_token(const Config& config, Findings& out) {
    if (!config.admin_token_file) {
        if (!config.listen_admin.is_unix())
            out.push_back(PreflightFinding{PreflightFinding::Severity::error, "admin.token_file",
                                           "required when listen.admin is a TCP address (or use listen.admin: "
                                           "unix:/path)",
                                           config.positions.count("admin.token_file") ? "" : "listen.admin"});
        return;
    }
    const auto& path = *config.admin_token_file;
    const auto before = out.size();
    // A pipe is allowed, as for the CLI's --token-file.
    check_private_file("admin.token_file", path, out, /*regular_only=*/false);
    if (out.size() != before) return;
    struct stat st {};
    // Reading a pipe here would take the token `serve` is to read.
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    try {
        // The messages name the setting and the file, as serve's own read does.
        std::string token = read_admin_token_file(path, "admin.token_file");
        wipe_string(token);
    } catch (const std::exception& e) {
        add(out, "admin.token_file", e.what());
    }
}

void check_access_log(const Config& config, Findings& out) {
    const auto& path = config.log_access;
    if (path == "stdout") return;
    if (!exists(path)) {
        if (auto why = unwritable_directory(directory_of(path))) add(out, "log.access", *why);
        return;
    }
    // Opened as `serve` opens it, without creating or truncating anything.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0) add(out, "log.access", "cannot write " + path + ": " + std::strerror(errno));
}

void check_credential_files(const Config& config, Findings& out) {
    for (std::size_t i = 0; i < config.vaults.size(); ++i) {
        for (const auto& [name, source] : config.vaults[i].credentials) {
            if (source.kind != CredentialSource::Kind::file) continue;
            if (auto why = unreadable(source.ref, true))
                add(out, "vaults[" + std::to_string(i) + "].credentials." + name + ".file", *why);
        }
    }
}

}  // namespace

std::optional<std::string> unreadable(const std::string& path, bool regular_only) {
    // Non-blocking, so that a pipe with no writer does not hang the check.
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0) return "cannot read " + path + ": " + std::strerror(errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return "cannot read " + path + ": " + std::strerror(errno);
    if (S_ISDIR(st.st_mode)) return path + " is a directory, not a file";
    if (regular_only && !S_ISREG(st.st_mode)) return path + " is not a regular file";
    return std::nullopt;
}

std::optional<std::string> unwritable_directory(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return "directory " + dir + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
    if (::access(dir.c_str(), W_OK | X_OK) != 0) return "cannot create files in " + dir + ": " + std::strerror(errno);
    return std::nullopt;
}

std::string directory_of(const std::string& path) {
    const auto dir = std::filesystem::path(path).parent_path();
    return dir.empty() ? "." : dir.string();
}

void check_ca(const Config& config, Findings& out) {
    if (ca_created_on_start(config)) {
        const auto base = nearest_existing(directory_of(config.ca_cert));
        if (auto why = unwritable_directory(base)) add(out, "ca.cert", "cannot create the CA: " + *why);
        return;
    }
    const std::string hint = "; create a CA with `vaultgate ca init`";
    auto cert_bad = unreadable(config.ca_cert, true);
    if (cert_bad) add(out, "ca.cert", *cert_bad + (exists(config.ca_cert) ? "" : hint));
    auto key_bad = unreadable(config.ca_key, true);
    if (key_bad) add(out, "ca.key", *key_bad + (exists(config.ca_key) ? "" : hint));
    if (!key_bad) {
        if (auto open = open_to_others(config.ca_key)) {
            add(out, "ca.key", *open);
            key_bad = open;
        }
    }
    if (cert_bad || key_bad) return;
    const auto problems = check_ca_files(config.ca_cert, config.ca_key);
    if (problems.cert) add(out, "ca.cert", *problems.cert);
    if (problems.key) add(out, "ca.key", *problems.key);
}

void check_referenced_files(const Config& config, Findings& out) {
    check_upstream_ca(config, out);
    check_store(config, out);
    check_admin_token(config, out);
    check_access_log(config, out);
    check_credential_files(config, out);
}

}  // namespace vaultgate::preflight
