// The SNI reader, against real ClientHellos produced by OpenSSL.
#include "vaultgate/egress/client_hello.hpp"
#include "test_text.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate {
namespace {

using test::client_hello;

TEST(ClientHello, ReadsTheServerName) {
    auto r = read_client_hello(client_hello("api.example.com"));
    EXPECT_EQ(r.status, HelloStatus::ok);
    EXPECT_EQ(r.server_name, "api.example.com");
}

TEST(ClientHello, NoServerName) { EXPECT_EQ(read_client_hello(client_hello(nullptr)).status, HelloStatus::no_sni); }

TEST(ClientHello, EveryPrefixIsIncompleteNeverMalformed) {
    auto hello = client_hello("api.example.com");
    for (std::size_t n = 0; n < hello.size(); ++n)
        EXPECT_EQ(read_client_hello(std::string_view(hello).substr(0, n)).status, HelloStatus::incomplete) << n;
}

// What a reader waits for next: the record header, the handshake header, then
// the whole hello, and never more than one record.
TEST(ClientHello, BytesNeededGrowToTheWholeHello) {
    const auto hello = client_hello("api.example.com");
    const std::string_view v(hello);
    EXPECT_EQ(client_hello_bytes_needed(v.substr(0, 0)), 5u);
    EXPECT_EQ(client_hello_bytes_needed(v.substr(0, 4)), 5u);
    EXPECT_EQ(client_hello_bytes_needed(v.substr(0, 5)), 9u);
    EXPECT_EQ(client_hello_bytes_needed(v.substr(0, 9)), hello.size());
    EXPECT_EQ(client_hello_bytes_needed(v.substr(0, hello.size() - 1)), hello.size());
    EXPECT_EQ(client_hello_bytes_needed(std::string("\x16\x03\x01\x40\x00\x01\xff\xff\xff", 9)),
              max_client_hello_bytes);
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
        if (r.status == HelloStatus::ok) {
            EXPECT_FALSE(r.server_name.empty());
        }
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

// A ClientHello assembled field by field, so each length can be made wrong on
// its own. Defaults give a well-formed hello with one server_name.
struct HelloParts {
    std::string session_id = std::string(32, 's');
    std::string cipher_suites = std::string("\x13\x01\x13\x02", 4);
    std::string compression = std::string(1, '\0');
    std::optional<std::string> extensions;  // the whole extensions block's content
    std::uint32_t handshake_type = 1;
    std::optional<std::size_t> record_len;  // overrides the computed one
};

std::string u16(std::size_t n) { return {static_cast<char>(n >> 8 & 0xff), static_cast<char>(n & 0xff)}; }
std::string u24(std::size_t n) { return static_cast<char>(n >> 16 & 0xff) + u16(n); }

std::string sni_extension(const std::string& name, std::uint8_t name_type = 0, const std::string& trailing = "") {
    std::string entry = static_cast<char>(name_type) + u16(name.size()) + name;
    std::string list = u16(entry.size() + trailing.size()) + entry + trailing;
    return u16(0) + u16(list.size()) + list;
}

std::string build_hello(const HelloParts& p) {
    std::string body = std::string("\x03\x03", 2) + std::string(32, 'r');
    body += static_cast<char>(p.session_id.size()) + p.session_id;
    body += u16(p.cipher_suites.size()) + p.cipher_suites;
    body += static_cast<char>(p.compression.size()) + p.compression;
    const std::string ext = p.extensions.value_or(sni_extension("api.example.com"));
    if (!ext.empty() || p.extensions) body += u16(ext.size()) + ext;
    std::string handshake = static_cast<char>(p.handshake_type) + u24(body.size()) + body;
    return std::string("\x16\x03\x01", 3) + u16(p.record_len.value_or(handshake.size())) + handshake;
}

TEST(ClientHello, AHelloBuiltFieldByFieldIsRead) {
    auto r = read_client_hello(build_hello({}));
    EXPECT_EQ(r.status, HelloStatus::ok);
    EXPECT_EQ(r.server_name, "api.example.com");
}

// Two server_name extensions: two readers could each believe a different one.
TEST(ClientHello, ASecondServerNameIsMalformed) {
    HelloParts p;
    p.extensions = sni_extension("api.example.com") + sni_extension("evil.example.com");
    EXPECT_EQ(read_client_hello(build_hello(p)).status, HelloStatus::malformed);
}

TEST(ClientHello, EachBadFieldIsMalformed) {
    struct Case {
        const char* what;
        HelloParts parts;
    };
    std::vector<Case> cases;
    auto add = [&](const char* what, auto change) {
        HelloParts p;
        change(p);
        cases.push_back({what, p});
    };
    add("record length 0", [](HelloParts& p) { p.record_len = 0; });
    add("record longer than 16 KiB", [](HelloParts& p) { p.record_len = 16385; });
    add("not a ClientHello", [](HelloParts& p) { p.handshake_type = 2; });
    add("session id of 33 bytes", [](HelloParts& p) { p.session_id = std::string(33, 's'); });
    add("no cipher suites", [](HelloParts& p) { p.cipher_suites.clear(); });
    add("odd cipher suite length", [](HelloParts& p) { p.cipher_suites = "\x13"; });
    add("no compression method", [](HelloParts& p) { p.compression.clear(); });
    add("extension longer than the block",
        [](HelloParts& p) { p.extensions = u16(0) + u16(200) + std::string(10, 'x'); });
    add("name type other than host_name", [](HelloParts& p) { p.extensions = sni_extension("a.example", 1); });
    add("empty name", [](HelloParts& p) { p.extensions = sni_extension(""); });
    add("bytes after the name", [](HelloParts& p) { p.extensions = sni_extension("a.example", 0, "xx"); });
    add("space in the name", [](HelloParts& p) { p.extensions = sni_extension("a b.example"); });
    for (const auto& c : cases)
        EXPECT_EQ(read_client_hello(build_hello(c.parts)).status, HelloStatus::malformed) << c.what;
}

TEST(ClientHello, OtherExtensionsAloneMeanNoServerName) {
    HelloParts p;
    p.extensions = u16(0x2b) + u16(3) + std::string("\x02\x03\x04", 3);  // supported_versions
    EXPECT_EQ(read_client_hello(build_hello(p)).status, HelloStatus::no_sni);
    p.extensions = std::string();  // an empty extensions block
    EXPECT_EQ(read_client_hello(build_hello(p)).status, HelloStatus::no_sni);
}

TEST(SupportedVersionsTest, ListsTls13WhereverItIsInTheList) {
    EXPECT_TRUE(lists_tls13(std::string("\x02\x03\x04", 3)));
    EXPECT_TRUE(lists_tls13(std::string("\x04\x03\x03\x03\x04", 5)));
    EXPECT_TRUE(lists_tls13(std::string("\x06\x7a\x7a\x03\x04\x03\x03", 7)));  // after a GREASE value
}

TEST(SupportedVersionsTest, AListWithoutTls13ListsNothingNewer) {
    EXPECT_FALSE(lists_tls13(std::string("\x02\x03\x03", 3)));
    EXPECT_FALSE(lists_tls13(std::string("\x04\x03\x03\x03\x02", 5)));
}

TEST(SupportedVersionsTest, AMalformedBodyListsNothing) {
    EXPECT_FALSE(lists_tls13(""));
    EXPECT_FALSE(lists_tls13(std::string("\x00", 1)));
    EXPECT_FALSE(lists_tls13(std::string("\x03\x03\x04\x03", 4)));      // odd length
    EXPECT_FALSE(lists_tls13(std::string("\x04\x03\x04", 3)));          // shorter than it says
    EXPECT_FALSE(lists_tls13(std::string("\x02\x03\x04\x03\x04", 5)));  // longer than it says
    EXPECT_FALSE(lists_tls13(std::string("\x01\x03", 2)));
}

}  // namespace
}  // namespace vaultgate
