#pragma once
// The two TLS contexts: the client-facing one (MITM, a leaf per connection, ALPN
// as mitm.alpn says) and the upstream one (verified against upstream.ca_file,
// host name checked, TLS 1.2 or newer).
#include "net/io/tls_socket.hpp"
#include "net/io/types.hpp"
#include "vaultgate/crypto/ca.hpp"
#include "vaultgate/egress/host.hpp"

#include <string>

namespace vaultgate::net {

// Throws std::runtime_error naming ca_file when it cannot be loaded.
void configure_upstream_context(ssl::context& ctx, const std::string& ca_file);
void configure_client_facing_context(ssl::context& ctx);

// Puts the leaf and the shared leaf key on one client-facing connection;
// `chain_cert`, when not null (an intermediate vaultgate CA), is sent after the leaf.
bool use_leaf(tls_stream& stream, const LeafCertificate& leaf, X509* chain_cert);

// The ALPN list (wire format, LiveSettings::mitm_alpn) a client-facing
// connection accepts; `wire` must outlive the handshake.
void offer_alpn(tls_stream& stream, const std::string& wire);
// The protocol the handshake agreed on ("h2", "http/1.1"); empty when none.
std::string_view selected_alpn(tls_stream& stream);

// ALPN to a bound origin: h2, then http/1.1 (the upstream context alone
// offers http/1.1, as the token endpoints get it).
void offer_h2_upstream(tls_stream& stream);

// Sets SNI and the name (or IP) the upstream certificate must carry.
bool expect_upstream_identity(tls_stream& stream, const Authority& dest);

}  // namespace vaultgate::net
