// The canonical request beyond the published vectors: what a proxy sees on
// the wire (targets already percent-encoded by the client), S3's path rules,
// and the query and header rules at their edges.
#include "vaultgate/signing/sigv4.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace vaultgate::sigv4 {
namespace {

TEST(CanonicalUri, NonS3EncodesTheWirePathOnceMore) {
    // The client already encoded the path once; AWS encodes what it received again.
    EXPECT_EQ(canonical_uri("/example%20space/", false), "/example%2520space/");
    EXPECT_EQ(canonical_uri("/model/anthropic.claude-v2%3A1/invoke", false), "/model/anthropic.claude-v2%253A1/invoke");
    EXPECT_EQ(canonical_uri("/a%2Fb", false), "/a%252Fb");
    EXPECT_EQ(canonical_uri("/a$b", false), "/a%24b");
    EXPECT_EQ(canonical_uri("", false), "/");
}

TEST(CanonicalUri, NonS3RemovesDotAndEmptySegments) {
    EXPECT_EQ(canonical_uri("//example//", false), "/example/");
    EXPECT_EQ(canonical_uri("/a/./b/../c//d", false), "/a/c/d");
    EXPECT_EQ(canonical_uri("/../a", false), "/a");
    EXPECT_EQ(canonical_uri("/a/..b/.c", false), "/a/..b/.c");  // only whole segments are dot segments
}

TEST(CanonicalUri, S3KeepsThePathAsSentAndEncodesOnce) {
    // %2F is a slash inside a key: never turned into a separator, never re-encoded.
    EXPECT_EQ(canonical_uri("/bucket/a%2Fb", true), "/bucket/a%2Fb");
    EXPECT_EQ(canonical_uri("/bucket/a%2fb", true), "/bucket/a%2Fb");
    EXPECT_NE(canonical_uri("/bucket/a%2Fb", true), canonical_uri("/bucket/a/b", true));
    // No normalisation: double slashes and dot segments are part of the key.
    EXPECT_EQ(canonical_uri("/bucket//a//b/", true), "/bucket//a//b/");
    EXPECT_EQ(canonical_uri("/bucket/./a/../b", true), "/bucket/./a/../b");
    EXPECT_EQ(canonical_uri("//", true), "//");
    // Escapes are decoded and encoded once, with AWS's unreserved set.
    EXPECT_EQ(canonical_uri("/bucket/example%20space", true), "/bucket/example%20space");
    EXPECT_EQ(canonical_uri("/bucket/a%7Eb", true), "/bucket/a~b");
    // What S3 computes for bytes SDKs would have escaped: "(" is encoded, a raw
    // '+' is a space (s3cmd sends spaces so), an escaped one a plus.
    EXPECT_EQ(canonical_uri("/bucket/a(b)", true), "/bucket/a%28b%29");
    EXPECT_EQ(canonical_uri("/bucket/a+b", true), "/bucket/a%20b");
    EXPECT_EQ(canonical_uri("/bucket/a%2Bb", true), "/bucket/a%2Bb");
    EXPECT_EQ(canonical_uri("/a+b", false), "/a%2Bb");  // elsewhere a plus is a plus
    EXPECT_EQ(canonical_uri("/bucket/\xE1\x88\xB4", true), "/bucket/%E1%88%B4");
    EXPECT_EQ(canonical_uri("/bucket/100%", true), "/bucket/100%25");
    EXPECT_EQ(canonical_uri("", true), "/");
}

TEST(CanonicalRequest, S3PathWithEncodedSlashAndDoubleSlashesIsKept) {
    const std::vector<std::pair<std::string, std::string>> headers = {{"Host", "bucket.s3.us-east-1.amazonaws.com"},
                                                                      {"X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"},
                                                                      {"X-Amz-Date", "20260101T000000Z"}};
    EXPECT_EQ(canonical_request("GET", "/dir%2Fname//file.txt?versionId=3", headers, "UNSIGNED-PAYLOAD", true),
              "GET\n/dir%2Fname//file.txt\nversionId=3\n"
              "host:bucket.s3.us-east-1.amazonaws.com\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n"
              "x-amz-date:20260101T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD");
    // The same request for another service is normalised and encoded twice.
    EXPECT_NE(canonical_request("GET", "/dir%2Fname//file.txt", headers, "UNSIGNED-PAYLOAD", false)
                  .find("\n/dir%252Fname/file.txt\n"),
              std::string::npos);
}

TEST(CanonicalQuery, EncodesWithTheUnreservedSetAndSpaceAsPercent20) {
    EXPECT_EQ(canonical_query("q=a%20b"), "q=a%20b");
    EXPECT_EQ(canonical_query("q=a+b"), "q=a%2Bb");  // '+' is a plus, never a space
    EXPECT_EQ(canonical_query("prefix=a/b&delimiter=/"), "delimiter=%2F&prefix=a%2Fb");
    EXPECT_EQ(canonical_query("q=%2f%7e"), "q=%2F~");
    EXPECT_EQ(canonical_query("q=100%"), "q=100%25");
    EXPECT_EQ(canonical_query("a=1=2"), "a=1%3D2");
    EXPECT_EQ(canonical_query("q=\xE1\x88\xB4"), "q=%E1%88%B4");
}

TEST(CanonicalQuery, SortsByEncodedNameThenValue) {
    EXPECT_EQ(canonical_query("b=1&B=2&a=3"), "B=2&a=3&b=1");
    EXPECT_EQ(canonical_query("a=10&a=9&a=1"), "a=1&a=10&a=9");  // bytewise, not numeric
    EXPECT_EQ(canonical_query("x=a.b&x=a%2Fb"), "x=a%2Fb&x=a.b");
    EXPECT_EQ(canonical_query("a=1&a=1"), "a=1&a=1");
    // Sorted on the encoded form: "%" (0x25) sorts before "-" (0x2D).
    EXPECT_EQ(canonical_query("a-b=1&a b=2"), "a%20b=2&a-b=1");
}

TEST(CanonicalQuery, ValuelessAndEmptyParameters) {
    EXPECT_EQ(canonical_query("acl"), "acl=");
    EXPECT_EQ(canonical_query("b&a=1"), "a=1&b=");
    EXPECT_EQ(canonical_query("a=1&&b=2&"), "a=1&b=2");
    EXPECT_EQ(canonical_query(""), "");
}

TEST(CanonicalHeaders, TrimCollapseLowerSortAndJoin) {
    const std::vector<std::pair<std::string, std::string>> headers = {{"X-Amz-Meta-B", "  two   words \t here  "},
                                                                      {"Host", "example.amazonaws.com"},
                                                                      {"x-amz-meta-a", "first"},
                                                                      {"X-AMZ-META-A", "second"},
                                                                      {"Content-Type", "application/json"}};
    EXPECT_EQ(canonical_request("PUT", "/", headers, "UNSIGNED-PAYLOAD", false),
              "PUT\n/\n\ncontent-type:application/json\nhost:example.amazonaws.com\nx-amz-meta-a:first,second\n"
              "x-amz-meta-b:two words here\n\ncontent-type;host;x-amz-meta-a;x-amz-meta-b\nUNSIGNED-PAYLOAD");
    EXPECT_EQ(signed_header_list(headers), "content-type;host;x-amz-meta-a;x-amz-meta-b");
}

TEST(CanonicalRequest, S3ServicesAreRecognised) {
    EXPECT_TRUE(is_s3_service("s3"));
    EXPECT_TRUE(is_s3_service("s3-object-lambda"));
    EXPECT_TRUE(is_s3_service("s3-outposts"));
    EXPECT_FALSE(is_s3_service("bedrock"));
    EXPECT_FALSE(is_s3_service("sts"));
    EXPECT_FALSE(is_s3_service("s3tables-x"));
}

}  // namespace
}  // namespace vaultgate::sigv4
