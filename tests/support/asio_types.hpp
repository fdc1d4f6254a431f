#pragma once
// The Asio names the test fixtures share.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

namespace vaultgate::test {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

}  // namespace vaultgate::test
