// `vaultgate bootstrap` (docs/reference/bootstrap.md): takes the env a
// platform hands a sandbox, moves its secrets into a vault, binds them to the
// hosts they are for, opens a session, and prints the env the sandbox gets
// instead: placeholders, the proxy, and CA trust. The rules live in
// vaultgate/bootstrap_env.hpp; this file does the I/O in a safe order.
#include "cli/admin_client.hpp"
#include "cli/commands.hpp"
#include "vaultgate/credentials/bootstrap_env.hpp"
#include "vaultgate/util/encoding.hpp"

#include <nlohmann/json.hpp>

#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vaultgate::cli {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* system_trust_store = "/etc/ssl/certs/ca-certificates.crt";

struct Options {
    std::optional<std::string> vault_name;
    EnvFormat format = EnvFormat::env;
    std::vector<std::string> secret_names;
    std::optional<std::string> out_dir;
    std::optional<std::uint64_t> ttl;
};

Options read_options(const CommandLine& cl) {
    if (!cl.positional.empty())
        throw UsageError("takes no arguments; the env object comes on stdin (see vaultgate --help)");
    Options o;
    o.vault_name = cl.value("--vault");
    if (o.vault_name && o.vault_name->empty()) throw UsageError("--vault needs a name");
    if (auto f = cl.value("--format")) {
        auto format = parse_env_format(*f);
        if (!format) throw UsageError("--format must be env, json or shell");
        o.format = *format;
    }
    o.secret_names = cl.values("--secret");
    for (const auto& name : o.secret_names)
        if (!is_env_name(name)) throw UsageError("--secret: not an environment variable name");
    o.out_dir = cl.value("--out-dir");
    if (auto t = cl.value("--ttl")) o.ttl = parse_number(*t, "--ttl", 1, 365ull * 24 * 3600);
    return o;
}

std::string random_hex(std::size_t bytes) {
    std::vector<unsigned char> buf(bytes);
    if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1)
        throw std::runtime_error("the system random generator failed");
    return hex_encode(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()), /*upper_hex=*/false);
}

// The output directory, made before any call to the server so that a bad path
// fails before a vault is touched. Absolute, because the sandbox's working
// directory is not ours.
struct OutDir {
    fs::path path;
    bool made_here = false;  // a temporary directory to remove if we fail
};

OutDir prepare_out_dir(const std::optional<std::string>& given) {
    OutDir out;
    if (given) {
        std::error_code ec;
        out.path = fs::absolute(*given, ec);
        if (ec) throw UsageError("--out-dir " + *given + ": " + ec.message());
        if (fs::exists(out.path, ec)) {
            if (!fs::is_directory(out.path, ec)) throw UsageError("--out-dir " + *given + " is not a directory");
            return out;
        }
        fs::create_directories(out.path.parent_path(), ec);
        if (::mkdir(out.path.c_str(), 0700) != 0 && errno != EEXIST)
            throw UsageError("--out-dir " + *given + ": " + std::strerror(errno));
        return out;
    }
    const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
    std::error_code ec;
    fs::path base = runtime_dir != nullptr && *runtime_dir != '\0' && fs::is_directory(runtime_dir, ec)
                        ? fs::path(runtime_dir)
                        : fs::path("/tmp");
    std::string pattern = (base / "vaultgate-bootstrap-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)  // mkdtemp makes it 0700
        throw std::runtime_error("cannot make a directory under " + base.string() + ": " + std::strerror(errno));
    out.path = pattern;
    out.made_here = true;
    return out;
}

// A new file beside `path` under a random name, created exclusively and never
// through a link: whatever was planted in the directory (a symlink pointing
// elsewhere, a FIFO whose open would block) is not opened. 0644: the sandbox,
// maybe another user, reads the CA files.
int create_temp_beside(const fs::path& path, fs::path& temp) {
    constexpr int attempts = 8;  // a clash of 64 random bits means someone is guessing
    for (int i = 0; i < attempts; ++i) {
        temp = path;
        temp += ".tmp-" + random_hex(8);
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) return fd;
        if (errno != EEXIST) throw std::runtime_error("cannot write " + temp.string() + ": " + std::strerror(errno));
    }
    throw std::runtime_error("cannot write " + path.string() + ": " + std::to_string(attempts) +
                             " temporary names in a row already exist");
}

// Written beside and renamed over, so a sandbox reading a re-used --out-dir
// never sees half a bundle. The rename replaces a symlink or FIFO at `path`
// itself, never what a link points at.
void write_file(const fs::path& path, const std::string& content) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw std::runtime_error("cannot write " + path.string() + ": it is a directory");
    fs::path temp;
    const int fd = create_temp_beside(path, temp);
    const auto fail = [&](const std::string& what, int err) {
        ::unlink(temp.c_str());
        throw std::runtime_error("cannot write " + what + ": " + std::strerror(err));
    };
    std::string_view rest = content;
    while (!rest.empty()) {
        ssize_t n = ::write(fd, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            fail(temp.string(), err);
        }
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::close(fd) != 0) fail(temp.string(), errno);
    if (::rename(temp.c_str(), path.c_str()) != 0) fail(path.string(), errno);
}

// The system roots and then ours: tunnelled hosts present their real
// certificates, bound hosts present ours, and one file has to verify both.
std::string ca_bundle(const std::string& ca_pem) {
    std::ifstream in(system_trust_store, std::ios::binary);
    std::string bundle;
    if (in) {
        std::ostringstream text;
        text << in.rdbuf();
        bundle = text.str();
    }
    if (bundle.empty())
        std::fprintf(stderr,
                     "vaultgate bootstrap: warning: %s is not readable; ca-bundle.pem holds only the vaultgate CA, "
                     "so tunnelled hosts will not verify\n",
                     system_trust_store);
    else if (bundle.back() != '\n')
        bundle += '\n';
    bundle += ca_pem;
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
    return bundle;
}

// What the vault already holds, so that a re-run rotates rather than fails and
// does not bind a host twice.
struct VaultState {
    std::string id;
    std::vector<std::string> credentials;
    std::vector<Authority> services;
    bool changed = false;  // whether this run stored anything in it yet

    bool has_credential(const std::string& name) const {
        return std::find(credentials.begin(), credentials.end(), name) != credentials.end();
    }
    bool has_service(const Authority& a) const {
        return std::any_of(services.begin(), services.end(),
                           [&](const Authority& s) { return s.host == a.host && s.port == a.port; });
    }
};

json items_of(const json& body, const char* key) {
    if (body.is_array()) return body;
    if (body.is_object() && body.contains(key) && body[key].is_array()) return body[key];
    return json::array();
}

void read_vault_contents(const json& vault, VaultState& state) {
    for (const auto& c : items_of(vault, "credentials"))
        if (c.is_object() && c.contains("name") && c["name"].is_string())
            state.credentials.push_back(c["name"].get<std::string>());
    for (const auto& s : items_of(vault, "services")) {
        if (!s.is_object() || !s.contains("host") || !s["host"].is_string()) continue;
        std::uint16_t port = 443;
        if (s.contains("port") && s["port"].is_number_unsigned()) port = s["port"].get<std::uint16_t>();
        // Compare as the proxy does; a wildcard or odd host simply never matches.
        if (auto host = normalize_host(s["host"].get<std::string>()))
            state.services.push_back({*host.host, port, host.kind});
    }
}

std::string id_of(const json& body, const AdminClient& client) {
    if (!body.is_object() || !body.contains("id") || !body["id"].is_string())
        throw std::runtime_error("admin API at " + client.url() + ": the answer has no \"id\"");
    return body["id"].get<std::string>();
}

VaultState create_vault(const AdminClient& client, const std::string& name) {
    auto response = client.request("POST", "/v1/vaults", json{{"name", name}}.dump());
    expect_status(response, {200, 201}, client);
    VaultState state{id_of(parse_body(response, client), client), {}, {}};
    state.changed = true;
    return state;
}

// --vault NAME: the vault of that name, made if absent; without it, a new one.
VaultState open_vault(const AdminClient& client, const std::optional<std::string>& name) {
    if (!name) return create_vault(client, "bootstrap-" + random_hex(8));
    auto list = client.request("GET", "/v1/vaults");
    expect_status(list, {200}, client);
    for (const auto& v : items_of(parse_body(list, client), "vaults")) {
        if (!v.is_object() || !v.contains("name") || v["name"] != *name) continue;
        if (v.contains("source") && v["source"] == "config")
            throw UsageError("--vault " + *name +
                             ": that vault is defined in the config file, and the admin API cannot store "
                             "credentials in it; give another name");
        VaultState state{id_of(v, client), {}, {}};
        auto detail = client.request("GET", admin_target({"v1", "vaults", state.id}));
        expect_status(detail, {200}, client);
        read_vault_contents(parse_body(detail, client), state);
        return state;
    }
    return create_vault(client, *name);
}

// Stores or rotates one credential; the request body holding the value is
// wiped as soon as it has been sent.
void store_secret(const AdminClient& client, VaultState& vault, const SecretVar& secret) {
    const std::string base = admin_target({"v1", "vaults", vault.id, "credentials"});
    const std::string one = admin_target({"v1", "vaults", vault.id, "credentials", secret.name});
    if (!vault.has_credential(secret.name)) {
        std::string body = credential_body(secret.name, secret.value);
        ScopedWipe wipe(body);
        auto response = client.request("POST", base, body);
        try {
            expect_status(response, {200, 201}, client);
            vault.credentials.push_back(secret.name);
            vault.changed = true;
            std::fprintf(stderr, "vaultgate bootstrap: stored %s in vault %s\n", secret.name.c_str(), vault.id.c_str());
            return;
        } catch (const ApiError& e) {
            // Made meanwhile by another run: rotate it below, as if it had been there.
            if (e.code != "credential_exists") throw;
        }
    }
    std::string body = credential_body("", secret.value);
    ScopedWipe wipe(body);
    auto response = client.request("PUT", one, body);
    expect_status(response, {200, 201, 204}, client);
    vault.changed = true;
    std::fprintf(stderr, "vaultgate bootstrap: rotated %s in vault %s\n", secret.name.c_str(), vault.id.c_str());
}

void bind_secret(const AdminClient& client, VaultState& vault, const std::string& secret_name, const UrlVar& url) {
    const Authority& dest = url.target.authority;
    const std::string where = format_authority(dest);
    if (!url.target.tls) {
        std::fprintf(stderr,
                     "vaultgate bootstrap: %s is not bound: %s is a plain http:// URL, and vaultgate sends "
                     "secrets only over TLS\n",
                     secret_name.c_str(), url.name.c_str());
        return;
    }
    if (vault.has_service(dest)) {
        std::fprintf(stderr, "vaultgate bootstrap: %s: vault %s already has a service for %s; left as it is\n",
                     secret_name.c_str(), vault.id.c_str(), where.c_str());
        return;
    }
    json body = {{"host", dest.host},
                 {"port", dest.port},
                 {"auth_config", {{"type", "api-key"}, {"header", "x-api-key"}, {"key", secret_name}}}};
    auto response = client.request("POST", admin_target({"v1", "vaults", vault.id, "services"}), body.dump());
    expect_status(response, {200, 201}, client);
    vault.services.push_back(dest);
    std::fprintf(stderr, "vaultgate bootstrap: bound %s to %s (x-api-key, from %s)\n", secret_name.c_str(),
                 where.c_str(), url.name.c_str());
}

// The session's proxy variables; the platform's own proxy settings, if it
// passed any, are overridden, since traffic that skips vaultgate carries only
// placeholders and fails.
void add_session_env(EnvList& env, const json& session, const AdminClient& client) {
    std::optional<std::string> proxy_url;
    if (session.contains("proxy_url") && session["proxy_url"].is_string())
        proxy_url = session["proxy_url"].get<std::string>();
    json given = session.contains("env") && session["env"].is_object() ? session["env"] : json::object();
    for (const auto& [name, value] : given.items())
        if (value.is_string() && is_env_name(name)) set_env(env, name, value.get<std::string>());
    for (const char* name : {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}) {
        if (given.contains(name) && given[name].is_string()) continue;
        if (!proxy_url) throw std::runtime_error("admin API at " + client.url() + ": the new session has no proxy_url");
        set_env(env, name, *proxy_url);
    }
    if (!given.contains("NO_PROXY")) {
        std::string no_proxy = "localhost,127.0.0.1,::1";
        if (given.contains("no_proxy") && given["no_proxy"].is_string())
            no_proxy = given["no_proxy"].get<std::string>();
        set_env(env, "NO_PROXY", no_proxy);
    }
}

int run_bootstrap(const AdminClient& client, const Options& options, EnvList env, std::vector<SecretVar> secrets,
                  OutDir& out_dir) {
    const std::vector<UrlVar> urls = find_url_vars(env);

    VaultState vault = open_vault(client, options.vault_name);
    try {
        for (const auto& secret : secrets) store_secret(client, vault, secret);
        for (const auto& secret : secrets) {
            if (auto match = match_url_var(secret.name, urls))
                bind_secret(client, vault, secret.name, urls[*match]);
            else
                std::fprintf(stderr,
                             "vaultgate bootstrap: %s is stored but not bound: %s; bind it with "
                             "`vaultgate vault add-service %s ...`\n",
                             secret.name.c_str(),
                             urls.empty() ? "no variable holds an https:// URL"
                                          : "no single URL variable shares a leading name word with it",
                             vault.id.c_str());
        }

        json request = {{"vault_ids", {vault.id}}};
        if (options.ttl) request["ttl_seconds"] = *options.ttl;
        auto response = client.request("POST", "/v1/sessions", request.dump());
        expect_status(response, {200, 201}, client);
        json session = parse_body(response, client);
        if (!session.contains("ca_cert_pem") || !session["ca_cert_pem"].is_string())
            throw std::runtime_error("admin API at " + client.url() + ": the new session has no ca_cert_pem");
        const std::string ca_pem = session["ca_cert_pem"].get<std::string>();

        const fs::path ca_path = out_dir.path / "ca.pem";
        const fs::path bundle_path = out_dir.path / "ca-bundle.pem";
        write_file(ca_path, ca_pem);
        write_file(bundle_path, ca_bundle(ca_pem));

        add_session_env(env, session, client);
        for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"})
            set_env(env, name, bundle_path.string());
        set_env(env, "NODE_EXTRA_CA_CERTS", ca_path.string());
        // git sends proxy credentials only after a 407 unless told to send them
        // at once; with a default session configured there is no 407, and git
        // would run on the default session instead of this one.
        set_env(env, "GIT_HTTP_PROXY_AUTHMETHOD", "basic");
    } catch (const std::exception&) {
        if (vault.changed)
            std::fprintf(stderr, "vaultgate bootstrap: vault %s keeps what was stored in it before the failure\n",
                         vault.id.c_str());
        throw;
    }

    if (auto problem = render_problem(env, options.format))
        throw std::runtime_error("cannot write the environment: " + *problem);
    std::string text = render_env(env, options.format);
    // The last gate: a secret so short or so odd that it turns up in a proxy
    // URL or a path is still never printed.
    if (auto leaked = leaked_secrets(text, secrets); !leaked.empty())
        throw std::runtime_error("refusing to print the environment: the value of " + leaked.front() +
                                 " occurs in it (is it that short?)");
    out_dir.made_here = false;  // it holds the CA files the env points at
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0) throw std::runtime_error(std::string("writing stdout: ") + std::strerror(errno));
    return 0;
}

}  // namespace

int bootstrap_command(const Args& args) {
    CommandLine cl = parse_command_line(
        args, OptionSpec{{"--admin", "--token-file", "--vault", "--format", "--secret", "--out-dir", "--ttl"}, {}});
    Options options = read_options(cl);

    if (::isatty(STDIN_FILENO))
        std::fprintf(stderr, "vaultgate bootstrap: reading the env object (JSON) from stdin; end it with Ctrl-D\n");
    std::string input = read_all_wiping(STDIN_FILENO, "stdin", Whitespace::keep);
    std::optional<EnvList> parsed;
    {
        ScopedWipe wipe_input(input);
        std::string error;
        parsed = parse_env_object(input, &error);
        if (!parsed) throw UsageError(error);
    }
    EnvList env = std::move(*parsed);

    std::string error;
    auto names = choose_secret_names(env, options.secret_names, &error);
    if (!names) {
        for (auto& var : env) wipe_string(var.value);
        throw UsageError(error);
    }
    // From here on the real values live only in `secrets`, which wipe themselves.
    std::vector<SecretVar> secrets = take_secrets(env, *names);
    if (secrets.empty())
        std::fprintf(stderr,
                     "vaultgate bootstrap: warning: no secret variables (none ends in _API_KEY, _TOKEN or _SECRET; "
                     "name them with --secret NAME)\n");
    if (auto bad = unsendable_secrets(secrets); !bad.empty())
        throw UsageError(bad.front().name + ": " + bad.front().reason);
    for (const auto& name : scrub_other_values(env, secrets))
        std::fprintf(stderr, "vaultgate bootstrap: %s held a secret's value; it now holds the placeholder\n",
                     name.c_str());
    // Checked now so that an input the format cannot carry fails before the vault changes.
    if (auto problem = render_problem(env, options.format))
        throw UsageError("cannot write the environment: " + *problem);

    AdminClient client = admin_client_from(cl);
    OutDir out_dir = prepare_out_dir(options.out_dir);
    auto remove_unused_dir = [&] {
        std::error_code ec;
        if (out_dir.made_here) fs::remove_all(out_dir.path, ec);
    };
    int rc = 1;
    try {
        rc = report_api_errors(
            [&] { return run_bootstrap(client, options, std::move(env), std::move(secrets), out_dir); });
    } catch (...) {
        remove_unused_dir();
        throw;
    }
    if (rc != 0) remove_unused_dir();
    return rc;
}

void add_bootstrap_command(CLI::App& root, CommandRun& run) {
    add_self_parsed_command(root, "bootstrap",
                            "Turn a sandbox's env object (stdin) into a vault, a session and a placeholder env",
                            bootstrap_command, run);
}

}  // namespace vaultgate::cli
