#pragma once
// ClientHello readers. read_client_hello takes the server name (SNI) from the
// first bytes of a TLS connection without consuming them, for transparent mode;
// lists_tls13 reads one extension, in every client-facing handshake. Pure
// functions, both fuzzed.
#include <cstddef>
#include <string>
#include <string_view>

namespace vaultgate {

enum class HelloStatus {
    incomplete,  // need more bytes (within the first record)
    not_tls,     // does not start with a TLS handshake record
    malformed,   // a ClientHello that does not parse, or one split over records
    no_sni,      // a ClientHello without a server_name extension
    ok,
};

struct HelloResult {
    HelloStatus status = HelloStatus::incomplete;
    std::string server_name;  // as sent (the caller normalises and rejects IP literals)
};

// `bytes` is what has arrived so far. A ClientHello must fit in the first TLS
// record (16 KiB), which every mainstream client does.
HelloResult read_client_hello(std::string_view bytes);

// The most bytes read_client_hello ever needs: a record header and one full record.
inline constexpr std::size_t max_client_hello_bytes = 5 + 16384;

// How many bytes read_client_hello needs in all to decide, when it said the
// `bytes` so far are incomplete: the record header, the handshake header, then
// the whole ClientHello. Never more than max_client_hello_bytes; waiting for
// exactly this many spares a reader waking up for every fragment.
std::size_t client_hello_bytes_needed(std::string_view bytes);

// Whether the body of a ClientHello's supported_versions extension (RFC 8446
// 4.2.1: a one-byte length, then two-byte versions) lists TLS 1.3. A
// malformed body lists nothing.
bool lists_tls13(std::string_view supported_versions);

}  // namespace vaultgate
