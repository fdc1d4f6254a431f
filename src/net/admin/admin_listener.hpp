#pragma once
#include "net/io/types.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/admin/admin_http.hpp"

#include <functional>
#include <memory>
#include <optional>

namespace vaultgate::net {

// What one listener allows: the connections it serves at once (more are reset
// on accept) and the time a request head and body may take together.
struct AdminLimits {
    std::size_t max_connections = 64;
    clock::duration request_timeout = std::chrono::seconds(10);
};

class AdminListener {
public:
    using Handler = std::function<AdminResponse(const AdminRequest&)>;

    AdminListener(asio::io_context& ioc, ListenAddress address, Handler handler, std::optional<std::string> token,
                  AdminLimits limits);
    ~AdminListener();

    void start();   // binds (throws std::runtime_error naming the address) and accepts
    void close();
    std::optional<tcp::endpoint> tcp_endpoint() const;

private:
    asio::io_context& ioc_;
    ListenAddress address_;
    Handler handler_;
    std::optional<std::string> token_;
    AdminLimits limits_;
    std::unique_ptr<tcp::acceptor> tcp_acceptor_;
    std::unique_ptr<asio::local::stream_protocol::acceptor> unix_acceptor_;
};

}  // namespace vaultgate::net
