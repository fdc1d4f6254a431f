// The pre-flight's listener checks: every TCP listener is bound the way
// `serve` binds it and closed again, all held open together so that two of
// them on one port show too; a unix admin socket needs a directory to be
// created in, and nothing but an old socket at its path.
#include "net/io/listen.hpp"
#include "preflight_checks.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace vaultgate::preflight {

namespace {

using namespace vaultgate::net;

void add(Findings& out, std::string key, std::string message) {
    out.push_back(PreflightFinding{PreflightFinding::Severity::error, std::move(key), std::move(message), {}});
}

void check_unix_socket(const std::string& path, bool bind, Findings& out) {
    const std::string key = "listen.admin";
    if (auto why = unwritable_directory(directory_of(path))) return add(out, key, *why);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    // `serve` replaces a socket left by an earlier run, and nothing else.
    if (!S_ISSOCK(st.st_mode))
        return add(out, key, path + " exists and is not a socket; vaultgate replaces only a socket of its own");
    if (!bind) return;
    asio::io_context ioc;
    asio::local::stream_protocol::socket probe(ioc);
    error_code ec;
    probe.connect(asio::local::stream_protocol::endpoint(path), ec);
    if (!ec) add(out, key, "a server is already listening on " + path);
}

}  // namespace

void check_listeners(const Config& config, bool bind, Findings& out) {
    if (config.listen_admin.is_unix()) check_unix_socket(config.listen_admin.unix_path, bind, out);
    if (!bind) return;
    std::vector<std::pair<std::string, const ListenAddress*>> tcp_listeners{{"listen.proxy", &config.listen_proxy}};
    if (config.listen_transparent) tcp_listeners.emplace_back("listen.transparent", &*config.listen_transparent);
    if (!config.listen_admin.is_unix()) tcp_listeners.emplace_back("listen.admin", &config.listen_admin);

    asio::io_context ioc;
    std::vector<std::unique_ptr<tcp::acceptor>> held;  // closed when the check ends
    for (const auto& [key, address] : tcp_listeners) {
        held.push_back(std::make_unique<tcp::acceptor>(ioc));
        // The config holds IP literals only, so this cannot throw.
        const tcp::endpoint endpoint(asio::ip::make_address(address->host), address->port);
        try {
            listen_tcp(*held.back(), endpoint, "cannot bind " + address->to_string());
        } catch (const std::runtime_error& e) {
            add(out, key, e.what());
        }
    }
}

}  // namespace vaultgate::preflight
