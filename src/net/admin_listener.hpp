#pragma once
#include "types.hpp"
#include "vaultgate/config.hpp"
#include "vaultgate/server.hpp"

#include <functional>
#include <memory>
#include <optional>

namespace vaultgate::net {

class AdminListener {
public:
    using Handler = std::function<AdminReply(const AdminCall&)>;

    AdminListener(asio::io_context& ioc, ListenAddress address, Handler handler, std::optional<std::string> token);
    ~AdminListener();

    void start();   // binds (throws std::runtime_error naming the address) and accepts
    void close();
    std::optional<tcp::endpoint> tcp_endpoint() const;

private:
    asio::io_context& ioc_;
    ListenAddress address_;
    Handler handler_;
    std::optional<std::string> token_;
    std::unique_ptr<tcp::acceptor> tcp_acceptor_;
    std::unique_ptr<asio::local::stream_protocol::acceptor> unix_acceptor_;
};

}  // namespace vaultgate::net
