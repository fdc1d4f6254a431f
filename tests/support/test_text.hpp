// Small text helpers shared by the test suites: config edits, case folding,
// counting and reading what a process wrote, and a real TLS ClientHello to
// feed the proxy or the parser.
#pragma once

#include <openssl/ssl.h>

#include <cctype>
#include <cstddef>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace vaultgate::test {

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
        s.replace(pos, from.size(), to);
    return s;
}

// How many times `needle` occurs in `text` (overlapping ones included).
inline std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

// The whole content of a text file ("" when it cannot be read).
inline std::string read_text_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::string ascii_lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The first flight of an OpenSSL client naming `sni` (none when null),
// captured from a memory BIO: a real ClientHello.
inline std::string client_hello(const char* sni) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl.get(), in, out);  // ssl owns both BIOs from here
    if (sni) SSL_set_tlsext_host_name(ssl.get(), sni);
    SSL_set_connect_state(ssl.get());
    SSL_do_handshake(ssl.get());
    char* data = nullptr;
    long n = BIO_get_mem_data(out, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace vaultgate::test
