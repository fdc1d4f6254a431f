// The SNI reader, against real ClientHellos produced by OpenSSL.
#include "vaultgate/client_hello.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <memory>
#include <string>

namespace vaultgate {
namespace {

// The first flight of a TLS client, captured from a memory BIO.
std::string client_hello(const char* sni) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl.get(), in, out);
    if (sni) SSL_set_tlsext_host_name(ssl.get(), sni);
    SSL_set_connect_state(ssl.get());
    SSL_do_handshake(ssl.get());
    char* data = nullptr;
    long n = BIO_get_mem_data(out, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

TEST(ClientHello, ReadsTheServerName) {
    auto r = read_client_hello(client_hello("api.example.com"));
    EXPECT_EQ(r.status, HelloStatus::ok);
    EXPECT_EQ(r.server_name, "api.example.com");
}

TEST(ClientHello, NoServerName) {
    EXPECT_EQ(read_client_hello(client_hello(nullptr)).status, HelloStatus::no_sni);
}

TEST(ClientHello, EveryPrefixIsIncompleteNeverMalformed) {
    auto hello = client_hello("api.example.com");
    for (std::size_t n = 0; n < hello.size(); ++n)
        EXPECT_EQ(read_client_hello(std::string_view(hello).substr(0, n)).status, HelloStatus::incomplete) << n;
}

TEST(ClientHello, NotTls) {
    EXPECT_EQ(read_client_hello("GET / HTTP/1.1\r\n").status, HelloStatus::not_tls);
    EXPECT_EQ(read_client_hello(std::string("\x16\x02\x00\x00\x10", 5)).status, HelloStatus::not_tls);
}

TEST(ClientHello, CorruptedLengthsAreMalformedNotOverread) {
    auto hello = client_hello("api.example.com");
    // Every single-byte change in the header and the first extensions either
    // still parses or is refused; none may read out of bounds (ASan checks).
    for (std::size_t i = 0; i < hello.size(); ++i) {
        auto bad = hello;
        bad[i] = static_cast<char>(bad[i] ^ 0xff);
        auto r = read_client_hello(bad);
        if (r.status == HelloStatus::ok) EXPECT_FALSE(r.server_name.empty());
    }
    auto split = hello;
    split[3] = 0;
    split[4] = 10;  // record shorter than the ClientHello: split over records
    EXPECT_EQ(read_client_hello(split).status, HelloStatus::malformed);
}

TEST(ClientHello, ControlBytesInTheNameAreMalformed) {
    auto hello = client_hello("abc.example.com");
    auto pos = hello.find("abc.example.com");
    ASSERT_NE(pos, std::string::npos);
    hello[pos + 1] = '\n';
    EXPECT_EQ(read_client_hello(hello).status, HelloStatus::malformed);
}

}  // namespace
}  // namespace vaultgate
