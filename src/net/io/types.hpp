#pragma once
// Executor, stream and coroutine aliases shared by the network code. Also the
// precompiled header of the network libraries: Asio and its SSL layer are the
// bulk of their compile time.
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>

namespace vaultgate::net {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
template <class T = void>
using awaitable = asio::awaitable<T>;
using asio::use_awaitable;
inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
using clock = std::chrono::steady_clock;

class TlsSocket;
using tls_stream = TlsSocket;

}  // namespace vaultgate::net
