// The response heads vaultgate writes to the client, built from the origin's:
// what a redacting service's head may still carry, and which 1xx heads go on.
// Pure functions of the exchange; no network here.
#include "net/forward/exchange.hpp"

#include <gtest/gtest.h>

namespace vaultgate::net {
namespace {

// A placeholder that is a token, as vaultgate's are, and one that is not.
const std::string placeholder = "vaultgate-placeholder-T";
const std::string bracketed = "[redacted]";

ResponseHead head_with(std::vector<Header> headers, int status = 200, std::string reason = "OK") {
    ResponseHead head;
    head.status = status;
    head.reason = std::move(reason);
    head.headers = std::move(headers);
    return head;
}

TEST(ResponseHeadForClient, TheSecretIsRedactedFromReasonNamesAndValues) {
    Redactor redactor(Secret("tok_0123456789"), placeholder);
    auto head = head_with({{"X-tok_0123456789", "a tok_0123456789 b"}, {"Plain", "kept"}}, 200, "OK tok_0123456789");
    auto text = serialize_for_client(head, &redactor);
    ASSERT_TRUE(text);
    EXPECT_EQ(*text,
              "HTTP/1.1 200 OK vaultgate-placeholder-T\r\nX-vaultgate-placeholder-T: a "
              "vaultgate-placeholder-T b\r\nPlain: kept\r\n\r\n");
}

TEST(ResponseHeadForClient, ANameThatIsNoTokenOnceRedactedIsDropped) {
    // '[' and ']' cannot be in a field name.
    Redactor redactor(Secret("tok_0123456789"), bracketed);
    auto head = head_with({{"tok_0123456789", "v"}, {"Plain", "kept"}});
    auto text = serialize_for_client(head, &redactor);
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, "HTTP/1.1 200 OK\r\nPlain: kept\r\n\r\n");
}

TEST(ResponseHeadForClient, ACopyAcrossAFieldBoundaryRefusesTheHead) {
    // Each part alone holds no copy; the serialised "name: value" does.
    Redactor redactor(Secret("tok: 0123456789"), placeholder);
    auto head = head_with({{"X-tok", "0123456789"}});
    EXPECT_FALSE(serialize_for_client(head, &redactor));
}

TEST(ResponseHeadForClient, WithoutARedactorTheHeadIsSerialisedAsIs) {
    auto head = head_with({{"X-tok_0123456789", "v"}});
    EXPECT_EQ(serialize_for_client(head, nullptr), "HTTP/1.1 200 OK\r\nX-tok_0123456789: v\r\n\r\n");
}

TEST(InformationalForClient, OnlyHttp11ClientsGetA1xxAndNeverA100) {
    auto hint = head_with({{"Link", "</a.css>; rel=preload"},
                           {"Connection", "X-Hop"},
                           {"X-Hop", "1"},
                           {"Proxy-Connection", "keep-alive"}},
                          103, "Early Hints");
    auto copy = hint;
    EXPECT_FALSE(informational_for_client(copy, 0, nullptr));
    copy = hint;
    EXPECT_EQ(informational_for_client(copy, 1, nullptr),
              "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
    auto cont = head_with({}, 100, "Continue");
    EXPECT_FALSE(informational_for_client(cont, 1, nullptr));
}

TEST(InformationalForClient, AnUnredactableHintIsDropped) {
    Redactor redactor(Secret("tok: 0123456789"), placeholder);
    auto hint = head_with({{"X-tok", "0123456789"}}, 103, "Early Hints");
    EXPECT_FALSE(informational_for_client(hint, 1, &redactor));
}

TEST(ContentCoding, OnlyNoneOrASingleIdentityIsIdentity) {
    EXPECT_TRUE(content_coding_is_identity(head_with({})));
    EXPECT_TRUE(content_coding_is_identity(head_with({{"Content-Encoding", "identity"}})));
    EXPECT_TRUE(content_coding_is_identity(head_with({{"content-encoding", "IDENTITY"}})));
    EXPECT_FALSE(content_coding_is_identity(head_with({{"Content-Encoding", "gzip"}})));
    EXPECT_FALSE(content_coding_is_identity(head_with({{"Content-Encoding", "identity, gzip"}})));
    EXPECT_FALSE(content_coding_is_identity(head_with({{"Content-Encoding", ""}})));
    EXPECT_FALSE(
        content_coding_is_identity(head_with({{"Content-Encoding", "identity"}, {"Content-Encoding", "gzip"}})));
    EXPECT_FALSE(
        content_coding_is_identity(head_with({{"Content-Encoding", "identity"}, {"Content-Encoding", "identity"}})));
}

}  // namespace
}  // namespace vaultgate::net
