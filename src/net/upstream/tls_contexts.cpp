#include "net/upstream/tls_contexts.hpp"

#include "net/upstream/runtime.hpp"

#include "vaultgate/egress/client_hello.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace vaultgate::net {

namespace {

// ALPN upstream: http/1.1 only, or h2 first where HTTP/2 can be spoken.
constexpr unsigned char alpn_http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char alpn_h2_http11[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// Where a client-facing connection keeps the ALPN list it accepts (offer_alpn).
int alpn_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

// ALPN to clients: the first of the connection's list (mitm.alpn, in
// vaultgate's order) that the client offers; http/1.1 when none was set.
int select_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                void*) {
    const auto* wire = static_cast<const std::string*>(SSL_get_ex_data(ssl, alpn_index()));
    const auto* ours = wire ? reinterpret_cast<const unsigned char*>(wire->data()) : alpn_http11;
    const auto size = wire ? static_cast<unsigned int>(wire->size()) : sizeof alpn_http11;
    unsigned char* selected = nullptr;
    if (SSL_select_next_proto(&selected, outlen, ours, size, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
    }
    // A client that offers none of them gets no ALPN answer; if it insists on
    // another protocol it fails to talk, which beats speaking one we do not inspect.
    return SSL_TLSEXT_ERR_NOACK;
}

// "h2", "http/1.1" -> the ALPN wire format (each name after its length).
std::string alpn_wire(const std::vector<std::string>& protocols) {
    std::string wire;
    for (const auto& p : protocols) {
        wire.push_back(static_cast<char>(p.size()));
        wire.append(p);
    }
    return wire;
}

// Record buffers are freed whenever a connection idles (release_buffers), so
// only busy connections hold this.
constexpr std::size_t record_read_buffer_bytes = 64 * 1024;

// TLS 1.3 suites on both sides, AES-128-GCM first: as strong as a connection
// on the sandbox's own network edge needs, and cheaper per byte and per
// handshake (SHA-256 transcript) than AES-256-GCM/SHA-384.
constexpr const char* tls13_suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

// TLS 1.2 (nginx's default, and many origins'): OpenSSL's DEFAULT set, the
// same suites, with the two ECDHE AES-128-GCM ones moved to the front. DEFAULT
// starts with AES-256-GCM, and an origin that follows the client's order
// (nginx does) would then cost every downloaded byte 14 AES rounds instead of 10.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ALL:!COMPLEMENTOFDEFAULT:!eNULL";

void prefer_aes128(SSL_CTX* native) {
    if (SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1 || SSL_CTX_set_ciphersuites(native, tls13_suites) != 1)
        throw std::runtime_error("TLS: OpenSSL rejected vaultgate's cipher preferences");
}

// Runs first thing in every client-facing handshake. A client that does not
// list TLS 1.3 will speak TLS 1.2: no ticket for it, and none accepted from it.
int offer_tickets_to_tls13_only(SSL* ssl, int*, void*) {
    const unsigned char* versions = nullptr;
    std::size_t length = 0;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_supported_versions, &versions, &length) != 1 ||
        !lists_tls13(std::string_view(reinterpret_cast<const char*>(versions), length)))
        SSL_set_options(ssl, SSL_OP_NO_TICKET);
    return SSL_CLIENT_HELLO_SUCCESS;
}

}  // namespace

void configure_upstream_context(ssl::context& ctx, const std::string& ca_file) {
    SSL_CTX* native = ctx.native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    // With read-ahead (see TlsSocket), one read() takes up to this much: four
    // full records of a streamed download instead of one.
    SSL_CTX_set_default_read_buffer_len(native, record_read_buffer_bytes);
    // AES-128-GCM first here too, for origins that follow the client's order.
    prefer_aes128(native);
    ctx.set_verify_mode(ssl::verify_peer);
    error_code ec;
    if (ca_file == "system") {
        ctx.set_default_verify_paths(ec);
        if (ec) throw std::runtime_error("upstream.ca_file: cannot load the system trust store: " + ec.message());
    } else {
        ctx.load_verify_file(ca_file, ec);
        if (ec) throw std::runtime_error("upstream.ca_file: cannot load " + ca_file + ": " + ec.message());
    }
    SSL_CTX_set_alpn_protos(native, alpn_http11, sizeof alpn_http11);
    // Upstream session resumption: OpenSSL's client cache is off by default; the
    // pool reuses whole connections instead.
}

void configure_client_facing_context(ssl::context& ctx) {
    SSL_CTX* native = ctx.native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    // No chain is built per handshake (costly): the leaf is sent alone when the
    // vaultgate CA is a root the client trusts, and with the CA when that is
    // an intermediate (use_leaf).
    SSL_CTX_set_mode(native, SSL_MODE_NO_AUTO_CHAIN);
    SSL_CTX_set_default_read_buffer_len(native, record_read_buffer_bytes);
    // Resumption for TLS 1.3 clients only, with one stateless ticket (a client
    // that resumes needs one; minting it costs each handshake: docs/benchmarks.md). A TLS
    // 1.3 resumption runs a fresh key exchange (without SSL_OP_ALLOW_NO_DHE_KEX
    // OpenSSL accepts no PSK alone), so the ticket key, which lives as long as
    // the process, cannot open a recorded connection. A TLS 1.2 resumption has
    // no such exchange: TLS 1.2 clients get no ticket (offer_tickets_to_tls13_only).
    // No session cache either: it would hold up to 20 480 sessions, and tickets
    // need none.
    SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_num_tickets(native, 1);
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_client_hello_cb(native, offer_tickets_to_tls13_only, nullptr);
    SSL_CTX_set_alpn_select_cb(native, select_alpn, nullptr);
    // The server's choice (SSL_OP_CIPHER_SERVER_PREFERENCE above): AES-128-GCM first.
    prefer_aes128(native);
}

std::shared_ptr<const LiveSettings> make_live_settings(const Config& config, std::uint64_t generation) {
    auto settings = std::make_shared<LiveSettings>();
    settings->limits = config.limits;
    settings->upstream_resolve = config.upstream_resolve;
    settings->upstream_tls = std::make_shared<ssl::context>(ssl::context::tls_client);
    configure_upstream_context(*settings->upstream_tls, config.upstream_ca_file);
    settings->generation = generation;
    settings->mitm_alpn = alpn_wire(config.mitm_alpn);
    return settings;
}

void offer_alpn(tls_stream& stream, const std::string& wire) {
    SSL_set_ex_data(stream.native_handle(), alpn_index(), const_cast<std::string*>(&wire));
}

std::string_view selected_alpn(tls_stream& stream) {
    const unsigned char* data = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(stream.native_handle(), &data, &length);
    return data ? std::string_view(reinterpret_cast<const char*>(data), length) : std::string_view();
}

bool use_leaf(tls_stream& stream, const LeafCertificate& leaf, X509* chain_cert) {
    SSL* ssl = stream.native_handle();
    if (SSL_use_certificate(ssl, leaf.cert.get()) != 1 || SSL_use_PrivateKey(ssl, leaf.key.get()) != 1) return false;
    return !chain_cert || SSL_add1_chain_cert(ssl, chain_cert) == 1;
}

void offer_h2_upstream(tls_stream& stream) {
    SSL_set_alpn_protos(stream.native_handle(), alpn_h2_http11, sizeof alpn_h2_http11);
}

bool expect_upstream_identity(tls_stream& stream, const Authority& dest) {
    SSL* ssl = stream.native_handle();
    if (dest.kind == HostKind::name) {
        if (SSL_set_tlsext_host_name(ssl, dest.host.c_str()) != 1) return false;
        // Wildcards in the upstream certificate may cover one label only.
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        return SSL_set1_host(ssl, dest.host.c_str()) == 1;
    }
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    return X509_VERIFY_PARAM_set1_ip_asc(param, dest.host.c_str()) == 1;
}

}  // namespace vaultgate::net
