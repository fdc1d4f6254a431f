// What a request needs before it can be re-signed: streaming and presigned
// forms are refused with a message that says which, and the payload hash
// comes from the client only when it is one AWS accepts.
#include "vaultgate/signing/sigv4.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vaultgate::sigv4 {
namespace {

RequestHead head_with(std::string target, std::vector<Header> headers) {
    RequestHead head;
    head.method = "PUT";
    head.target = std::move(target);
    head.headers = {{"Host", "bucket.s3.us-east-1.amazonaws.com"}};
    head.headers.insert(head.headers.end(), headers.begin(), headers.end());
    return head;
}

const std::string hex64 = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e";

TEST(Inspect, ClientPayloadHashIsUsedWhenAwsWouldAcceptIt) {
    Inspection r = inspect(head_with("/key", {{"X-Amz-Content-Sha256", hex64}}));
    EXPECT_TRUE(r.unsupported.empty());
    EXPECT_EQ(r.payload_hash, hex64);
    EXPECT_FALSE(r.hash_body);

    r = inspect(head_with("/key", {{"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}}));
    EXPECT_EQ(r.payload_hash, "UNSIGNED-PAYLOAD");
    EXPECT_FALSE(r.hash_body);
}

TEST(Inspect, AnythingElseMeansHashingTheBody) {
    for (const char* value : {"", "abc", "unsigned-payload", "UNSIGNED-PAYLOAD-X",
                              "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6", "zz"}) {
        SCOPED_TRACE(value);
        const Inspection r = inspect(head_with("/key", {{"X-Amz-Content-Sha256", value}}));
        EXPECT_TRUE(r.unsupported.empty());
        EXPECT_TRUE(r.payload_hash.empty());
        EXPECT_TRUE(r.hash_body);
    }
    const Inspection none = inspect(head_with("/key", {}));
    EXPECT_TRUE(none.unsupported.empty());
    EXPECT_TRUE(none.hash_body);
}

TEST(Inspect, StreamingPayloadsAreRefused) {
    for (const char* value : {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                              "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "streaming-aws4-hmac-sha256-payload"}) {
        SCOPED_TRACE(value);
        const Inspection r = inspect(head_with("/key", {{"X-Amz-Content-Sha256", value}}));
        EXPECT_NE(r.unsupported.find("streaming"), std::string::npos) << r.unsupported;
        EXPECT_FALSE(r.hash_body);
    }
    for (const char* coding : {"aws-chunked", "AWS-Chunked", "gzip, aws-chunked", "aws-chunked ,gzip"}) {
        SCOPED_TRACE(coding);
        const Inspection r = inspect(head_with("/key", {{"Content-Encoding", coding}}));
        EXPECT_NE(r.unsupported.find("aws-chunked"), std::string::npos) << r.unsupported;
    }
    // A second Content-Encoding header counts as well.
    EXPECT_FALSE(inspect(head_with("/key", {{"Content-Encoding", "gzip"}, {"content-encoding", "aws-chunked"}}))
                     .unsupported.empty());
    EXPECT_TRUE(inspect(head_with("/key", {{"Content-Encoding", "gzip"}})).unsupported.empty());
    EXPECT_TRUE(inspect(head_with("/key", {{"Content-Encoding", "aws-chunkedx"}})).unsupported.empty());
}

TEST(Inspect, PresignedUrlsAreRefused) {
    for (const char* target :
         {"/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101%2Fus-east-1%2Fs3%2Faws4_request"
          "&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=abc",
          "/key?x-amz-signature=abc", "/key?a=1&X-Amz-%53ignature=abc", "/key?X-Amz-Signature"}) {
        SCOPED_TRACE(target);
        const Inspection r = inspect(head_with(target, {}));
        EXPECT_NE(r.unsupported.find("presigned"), std::string::npos) << r.unsupported;
    }
    // The name, not a value, makes a URL presigned.
    EXPECT_TRUE(inspect(head_with("/key?prefix=X-Amz-Signature", {})).unsupported.empty());
    EXPECT_TRUE(inspect(head_with("/X-Amz-Signature=1", {})).unsupported.empty());
}

TEST(Inspect, RepeatedPayloadHashHeadersAreRefused) {
    const Inspection r =
        inspect(head_with("/key", {{"X-Amz-Content-Sha256", hex64}, {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}}));
    EXPECT_FALSE(r.unsupported.empty());
}

TEST(Inspect, MessagesArePlainAndEchoNothing) {
    const Inspection r = inspect(head_with("/key?X-Amz-Signature=SECRETSIG", {}));
    EXPECT_EQ(r.unsupported.find("SECRETSIG"), std::string::npos);
    for (char c : r.unsupported) EXPECT_TRUE(c >= 0x20 && c < 0x7f);
}

TEST(PayloadHash, Forms) {
    EXPECT_TRUE(is_payload_hash(hex64));
    EXPECT_TRUE(is_payload_hash("UNSIGNED-PAYLOAD"));
    EXPECT_FALSE(is_payload_hash(""));
    EXPECT_FALSE(is_payload_hash(hex64 + "0"));
    EXPECT_FALSE(is_payload_hash("STREAMING-UNSIGNED-PAYLOAD-TRAILER"));
}

}  // namespace
}  // namespace vaultgate::sigv4
