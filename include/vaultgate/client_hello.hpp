#pragma once
// Reads the server name (SNI) from the first bytes of a TLS connection without
// consuming them, for transparent mode. Pure function; fuzzed.
#include <string>
#include <string_view>

namespace vaultgate {

enum class HelloStatus {
    incomplete,   // need more bytes (within the first record)
    not_tls,      // does not start with a TLS handshake record
    malformed,    // a ClientHello that does not parse, or one split over records
    no_sni,       // a ClientHello without a server_name extension
    ok,
};

struct HelloResult {
    HelloStatus status = HelloStatus::incomplete;
    std::string server_name;   // as sent (the caller normalises and rejects IP literals)
};

// `bytes` is what has arrived so far. A ClientHello must fit in the first TLS
// record (16 KiB), which every mainstream client does.
HelloResult read_client_hello(std::string_view bytes);

}  // namespace vaultgate
