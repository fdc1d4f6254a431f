#pragma once
// The admin API listener: HTTP/1.1 over TCP (bearer token, compared in constant
// time) or a unix socket (mode 0600), at most limits.admin_connections at once.
#include "net/admin/admin_connection.hpp"
#include "net/io/types.hpp"
#include "vaultgate/admin/admin_http.hpp"
#include "vaultgate/config/config.hpp"

#include <functional>
#include <memory>
#include <optional>

namespace vaultgate::net {

class AdminListener {
public:
    using Handler = std::function<AdminResponse(const AdminRequest&)>;

    // With `runtime`, the listener answers POST /v1/explain itself (explain_endpoint.hpp).
    AdminListener(asio::io_context& ioc, ListenAddress address, Handler handler, std::optional<std::string> token,
                  AdminLimits limits, std::shared_ptr<const Runtime> runtime = nullptr);
    ~AdminListener();

    void start();  // binds (throws std::runtime_error naming the address) and accepts
    void close();
    std::optional<tcp::endpoint> tcp_endpoint() const;

private:
    std::shared_ptr<const AdminConnectionSettings> settings(std::optional<std::string> token) const;

    asio::io_context& ioc_;
    ListenAddress address_;
    Handler handler_;
    std::optional<std::string> token_;
    AdminLimits limits_;
    std::shared_ptr<const Runtime> runtime_;
    std::unique_ptr<tcp::acceptor> tcp_acceptor_;
    std::unique_ptr<asio::local::stream_protocol::acceptor> unix_acceptor_;
};

}  // namespace vaultgate::net
