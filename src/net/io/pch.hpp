// Precompiled header for the network translation units: Asio and its SSL layer
// are the bulk of their compile time.
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>
