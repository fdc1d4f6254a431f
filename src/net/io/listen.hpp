#pragma once
// Opening a listening socket, the same way for every listener (proxy,
// transparent, admin). Each throws std::runtime_error("<what>: <reason>").
#include "net/io/types.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace vaultgate::net {

// Opens, binds with SO_REUSEADDR (a restart need not wait out TIME_WAIT) and listens.
inline void listen_tcp(tcp::acceptor& acceptor, const tcp::endpoint& endpoint, const std::string& what) {
    error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error(what + ": " + ec.message());
}

// A unix socket at `path`, mode 0600. A socket file left by an earlier run is
// replaced; anything else at the path is not ours to delete.
inline void listen_unix(asio::local::stream_protocol::acceptor& acceptor, const std::string& path,
                        const std::string& what) {
    namespace fs = std::filesystem;
    std::error_code fec;
    if (fs::is_socket(path, fec)) fs::remove(path, fec);
    asio::local::stream_protocol::endpoint endpoint(path);
    error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    // The mode is set through the umask so no moment exists where the socket is wider open.
    const mode_t old = ::umask(0177);
    if (!ec) acceptor.bind(endpoint, ec);
    ::umask(old);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error(what + ": " + ec.message());
    ::chmod(path.c_str(), 0600);
}

}  // namespace vaultgate::net
