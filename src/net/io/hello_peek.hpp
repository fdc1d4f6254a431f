#pragma once
// Waits for a client's TLS ClientHello without consuming it: transparent mode
// routes by its server name, and a tunnel checks that it names the CONNECT
// host. The bytes stay in the socket for whoever reads next (OpenSSL for a
// MITM'd connection, the splice for a tunnel).
#include "net/io/types.hpp"
#include "net/io/watchdog.hpp"
#include "vaultgate/egress/client_hello.hpp"
#include "vaultgate/observe/metrics.hpp"

#include <string_view>

namespace vaultgate::net {

struct HelloPeek {
    // incomplete when the client closed, or the time ran out, before the hello was whole
    HelloResult hello;
    bool timed_out = false;
};

// Reads the ClientHello that `already_read` (bytes the caller took from the
// socket before) starts and the socket's unread bytes continue, within
// `timeout` (armed on `watchdog`, which must watch the socket). Between peeks
// it sleeps until the socket holds as many bytes as the parser needs next
// (SO_RCVLOWAT): a client that sends part of a hello and stalls, or trickles
// it, costs a few wake-ups, not one per fragment. At most
// max_client_hello_bytes are held. Each peek is counted in `metrics`.
awaitable<HelloPeek> peek_client_hello(tcp::socket& socket, std::string_view already_read, Watchdog& watchdog,
                                       clock::duration timeout, Metrics& metrics);

// Whether bytes (or the client's close) are waiting to be read, without waiting.
bool readable_now(tcp::socket& socket);

}  // namespace vaultgate::net
