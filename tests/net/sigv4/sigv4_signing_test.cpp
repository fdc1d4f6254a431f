// aws-sigv4 end to end: vaultgate re-signs what a sandbox sends, and an origin
// that recomputes each signature with botocore under the real secret key
// accepts it. Each test asserts what the origin saw.
#include "sigv4_fixture.hpp"

#include <algorithm>
#include <cstdio>

namespace vaultgate::test {
namespace {

using nlohmann::json;

bool has(const json& list, const std::string& item) { return std::find(list.begin(), list.end(), item) != list.end(); }

std::string length_of(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n"; }

// The origin's verdict on a request it accepted: 200, the signature held, and
// (when given) it was signed for `region` and `service`.
json accepted(const RawClient::Response& r, const std::string& region = "", const std::string& service = "") {
    EXPECT_EQ(r.status, 200) << r.body;
    json v = json::parse(r.body, nullptr, false);
    EXPECT_FALSE(v.is_discarded()) << r.body;
    if (v.is_discarded()) return json::object();
    EXPECT_EQ(v.value("verdict", ""), "ok") << r.body;
    if (!region.empty()) {
        EXPECT_EQ(v.value("region", ""), region);
    }
    if (!service.empty()) {
        EXPECT_EQ(v.value("service", ""), service);
    }
    return v;
}

// What a sandbox's SDK sends with its placeholder keys: vaultgate replaces it.
const std::string placeholder_auth =
    "Authorization: AWS4-HMAC-SHA256 Credential=AKIAPLACEHOLDER00000/19990101/us-east-1/sqs/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000\r\n"
    "X-Amz-Date: 19990101T000000Z\r\n";

TEST_F(Sigv4Test, GetWithUnsortedEncodedQueryIsSignedAndTheClientsFieldsReplaced) {
    start();
    const std::string target =
        "/?Version=2012-11-05&QueueNamePrefix=my%20queue%20name&Action=ListQueues&Tag=%E2%9C%93%C3%A9&empty=&b=2&a=1";
    auto r = send("sqs.eu-west-1.amazonaws.com", "GET " + target,
                  placeholder_auth + "X-Amz-Security-Token: placeholder-token\r\n");
    json v = accepted(r);
    EXPECT_EQ(v["target"], target);  // sent as the client wrote it; only the signature canonicalises
    EXPECT_EQ(v["access_key"], aws_access_key_id);
    EXPECT_EQ(v["region"], "eu-west-1");
    EXPECT_EQ(v["service"], "sqs");
    EXPECT_EQ(v["signed_headers"], json::array({"host", "x-amz-date"}));
    EXPECT_EQ(seen_header(v, "authorization").size(), 1u);
    ASSERT_EQ(seen_header(v, "x-amz-date").size(), 1u);
    EXPECT_NE(seen_header(v, "x-amz-date")[0], "19990101T000000Z");
    // No session_token configured for this service: the client's is removed, none is added.
    EXPECT_TRUE(seen_header(v, "x-amz-security-token").empty());
    // One signed request is one injection.
    const std::string metrics = proxy_->server().metrics().render({});
    const auto at = metrics.find("vaultgate_injections_total{vault=\"aws\"");
    ASSERT_NE(at, std::string::npos) << metrics;
    const std::string line = metrics.substr(at, metrics.find('\n', at) - at);
    EXPECT_EQ(line.substr(line.rfind(' ') + 1), "1") << line;
}

TEST_F(Sigv4Test, PostJsonBodyIsHashedByVaultgateAndTheSessionTokenSet) {
    start();
    const std::string body = R"({"Limit": 5, "ExclusiveStartTableName": "caf\u00e9"})";
    auto r = send("dynamodb.us-west-2.amazonaws.com", "POST /",
                  placeholder_auth +
                      "X-Amz-Security-Token: placeholder-token\r\n"
                      "Content-Type: application/x-amz-json-1.0\r\n"
                      "X-Amz-Target:   DynamoDB_20120810.ListTables  \r\n"
                      "User-Agent: sandbox-sdk/1.0\r\n" +
                      length_of(body),
                  body);
    json v = accepted(r, "us-west-2", "dynamodb");
    EXPECT_EQ(v["signed_headers"],
              json::array({"content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"}));
    EXPECT_EQ(seen_header(v, "x-amz-security-token"), std::vector<std::string>{aws_session_token});
    EXPECT_EQ(v["body_length"], body.size());
    // The hash vaultgate computed is in the canonical request, and the body arrived whole.
    const std::string canonical = v["canonical_request"];
    EXPECT_EQ(canonical.substr(canonical.rfind('\n') + 1), v["body_sha256"].get<std::string>());
}

TEST_F(Sigv4Test, ChunkedBodyIsReadWholeAndSentWithContentLength) {
    start();
    auto r = send("dynamodb.us-west-2.amazonaws.com", "POST /",
                  "Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
                  "Transfer-Encoding: chunked\r\n",
                  "7\r\n{\"Limit\r\n5\r\n\": 3}\r\n0\r\n\r\n");
    json v = accepted(r);
    EXPECT_EQ(v["body_length"], 12);
    EXPECT_EQ(seen_header(v, "content-length"), std::vector<std::string>{"12"});
    EXPECT_TRUE(seen_header(v, "transfer-encoding").empty());
}

TEST_F(Sigv4Test, ExpectContinueIsAnsweredBeforeTheBodyIsRead) {
    start();
    auto c = open("dynamodb.us-west-2.amazonaws.com");
    c->write("POST / HTTP/1.1\r\nHost: " + authority("dynamodb.us-west-2.amazonaws.com") +
             "\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
    auto cont = c->read_response();
    ASSERT_TRUE(cont);
    EXPECT_EQ(cont->status, 100);
    c->write("{}");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(verdict_of(*r)["verdict"], "ok");
}

TEST_F(Sigv4Test, S3KeyWithEncodedSlashAndDoubleSlashIsSignedAsSentPathStyleAndVirtualHost) {
    start();
    const std::string body = "object bytes\n";
    const std::string path_style = "/media-bucket/photos%2F2026//raw%20file.txt";
    auto r =
        send("s3.us-east-1.amazonaws.com", "PUT " + path_style,
             "Content-Type: text/plain\r\nX-Amz-Meta-Owner: sandbox\r\nContent-Length: " + std::to_string(body.size()) +
                 "\r\n",
             body);
    json v = accepted(r);
    EXPECT_EQ(v["target"], path_style);
    EXPECT_EQ(v["service"], "s3");
    EXPECT_EQ(v["region"], "us-east-1");
    // S3 signs the path as sent: %2F stays, // stays.
    const std::string canonical = v["canonical_request"];
    EXPECT_EQ(canonical.substr(0, canonical.find('\n', 4)), "PUT\n" + path_style);
    // vaultgate hashed the body and told S3 so, signed.
    EXPECT_EQ(seen_header(v, "x-amz-content-sha256"), std::vector<std::string>{v["body_sha256"].get<std::string>()});
    EXPECT_TRUE(has(v["signed_headers"], "x-amz-content-sha256"));
    EXPECT_TRUE(has(v["signed_headers"], "x-amz-meta-owner"));
    EXPECT_TRUE(has(v["signed_headers"], "content-type"));

    const std::string virtual_host = "/photos%2F2026//raw%20file.txt";
    r = send("media-bucket.s3.eu-central-1.amazonaws.com", "PUT " + virtual_host, length_of(body), body);
    v = accepted(r);
    EXPECT_EQ(v["target"], virtual_host);
    EXPECT_EQ(v["service"], "s3");
    EXPECT_EQ(v["region"], "eu-central-1");
}

TEST_F(Sigv4Test, ClientUnsignedPayloadIsKeptAndTheBodyStreams) {
    start("  sign_body_bytes: 1024\n");
    // Over the limit, but vaultgate need not read it: the client named the payload hash.
    const std::string chunk(3000, 'x');
    char size[16];
    std::snprintf(size, sizeof size, "%zx", chunk.size());
    auto r = send("s3.us-east-1.amazonaws.com", "PUT /bucket/big.bin",
                  "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nTransfer-Encoding: chunked\r\n",
                  std::string(size) + "\r\n" + chunk + "\r\n0\r\n\r\n");
    json v = accepted(r);
    EXPECT_EQ(seen_header(v, "x-amz-content-sha256"), std::vector<std::string>{"UNSIGNED-PAYLOAD"});
    EXPECT_TRUE(has(v["signed_headers"], "x-amz-content-sha256"));
    EXPECT_EQ(seen_header(v, "transfer-encoding"), std::vector<std::string>{"chunked"});  // streamed, not buffered
    EXPECT_EQ(v["body_length"], chunk.size());
}

TEST_F(Sigv4Test, ClientPayloadHashIsKeptAndChecked) {
    start();
    const std::string body = "abc";
    const std::string sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    auto r = send("s3.us-east-1.amazonaws.com", "PUT /bucket/abc.txt",
                  "x-amz-content-sha256: " + sha + "\r\nContent-Length: 3\r\n", body);
    json v = accepted(r);
    EXPECT_EQ(seen_header(v, "x-amz-content-sha256"), std::vector<std::string>{sha});
}

TEST_F(Sigv4Test, BodyOverSignBodyBytesIsRefusedWith413BeforeAnythingIsSent) {
    start("  sign_body_bytes: 1024\n");
    auto r = send("dynamodb.us-west-2.amazonaws.com", "POST /", "Content-Length: 1025\r\n", std::string(1025, 'a'));
    EXPECT_EQ(r.status, 413);
    EXPECT_NE(r.body.find("body_too_large_to_sign"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("limits.sign_body_bytes"), std::string::npos) << r.body;

    // A chunked body is refused once it grows past the limit.
    const std::string chunk(600, 'b');
    auto c = open("dynamodb.us-west-2.amazonaws.com");
    c->write("POST / HTTP/1.1\r\nHost: " + authority("dynamodb.us-west-2.amazonaws.com") +
             "\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n" + chunk + "\r\n258\r\n" + chunk + "\r\n");
    auto chunked = c->read_response();
    ASSERT_TRUE(chunked);
    EXPECT_EQ(chunked->status, 413);
    EXPECT_TRUE(chunked->closed || c->closed_by_peer());

    // At the limit it goes through.
    r = send("dynamodb.us-west-2.amazonaws.com", "POST /", "Content-Length: 1024\r\n", std::string(1024, 'c'));
    EXPECT_EQ(r.status, 200) << r.body;
    const auto verdicts = origin_->verdicts();
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0]["body_length"], 1024);
}

TEST_F(Sigv4Test, ABrokenOrStalledBodyReadForSigningIsRefusedAndNothingIsSent) {
    start("  idle_timeout: 1s\n");
    const std::string host = "dynamodb.us-west-2.amazonaws.com";
    // A chunk size that is no hex number.
    auto broken = open(host);
    broken->write("POST / HTTP/1.1\r\nHost: " + authority(host) + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n");
    auto r = broken->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("bad_chunked_body"), std::string::npos) << r->body;

    // A body that stops arriving: refused once the idle timeout runs out.
    auto stalled = open(host);
    stalled->write("POST / HTTP/1.1\r\nHost: " + authority(host) + "\r\nContent-Length: 100\r\n\r\nonly-part");
    r = stalled->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);

    EXPECT_TRUE(origin_->verdicts().empty()) << "nothing reaches the origin before the body is whole";
    const std::string access = stop();
    EXPECT_NE(access.find("\"reason\":\"bad_chunked_body\""), std::string::npos) << access;
    EXPECT_NE(access.find("\"reason\":\"request_timeout\""), std::string::npos) << access;
}

TEST_F(Sigv4Test, PresignedStreamingAndAwsChunkedAreRefusedWith400) {
    start();
    const std::string host = "s3.us-east-1.amazonaws.com";
    auto presigned =
        send(host,
             "GET /bucket/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAPLACEHOLDER00000%2F20260101%2Fus-"
             "east-1%2Fs3%2Faws4_request&X-Amz-Signature=abcdef",
             "");
    EXPECT_EQ(presigned.status, 400);
    EXPECT_NE(presigned.body.find("sigv4_unsupported"), std::string::npos) << presigned.body;
    EXPECT_NE(presigned.body.find("presigned"), std::string::npos) << presigned.body;

    auto chunked =
        send(host, "PUT /bucket/key",
             "Content-Encoding: aws-chunked\r\nX-Amz-Decoded-Content-Length: 3\r\nContent-Length: 3\r\n", "abc");
    EXPECT_EQ(chunked.status, 400);
    EXPECT_NE(chunked.body.find("aws-chunked"), std::string::npos) << chunked.body;

    auto streaming = send(host, "PUT /bucket/key",
                          "X-Amz-Content-Sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\r\nContent-Length: 3\r\n", "abc");
    EXPECT_EQ(streaming.status, 400);
    EXPECT_NE(streaming.body.find("STREAMING"), std::string::npos) << streaming.body;

    EXPECT_TRUE(origin_->verdicts().empty());  // nothing reached the origin
}

TEST_F(Sigv4Test, BedrockRuntimeSignsAsBedrockInItsRegion) {
    start();
    const std::string body = R"({"prompt":"\n\nHuman: hi\n\nAssistant:","max_tokens_to_sample":20})";
    auto r = send("bedrock-runtime.us-west-2.amazonaws.com", "POST /model/anthropic.claude-v2:1/invoke",
                  "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n",
                  body);
    json v = accepted(r, "us-west-2", "bedrock");
    // A non-S3 path is encoded twice in the canonical request.
    const std::string canonical = v["canonical_request"];
    EXPECT_EQ(canonical.substr(0, canonical.find('\n', 5)), "POST\n/model/anthropic.claude-v2%3A1/invoke");
}

TEST_F(Sigv4Test, HostWithoutRegionOrServiceNeedsTheOverride) {
    start();
    auto r = send("api.internal.test", "GET /v1/items", "");
    EXPECT_EQ(r.status, 502);
    EXPECT_NE(r.body.find("credential_unusable"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("auth.region"), std::string::npos) << r.body;
    EXPECT_TRUE(origin_->verdicts().empty());

    r = send("gateway.internal.test", "GET /prod/items?limit=3", "");
    json v = accepted(r, "eu-north-1", "execute-api");
}

TEST_F(Sigv4Test, RefusalsAreInTheAccessLog) {
    start("  sign_body_bytes: 16\n");
    EXPECT_EQ(send("api.internal.test", "GET /", "").status, 502);
    EXPECT_EQ(send("s3.us-east-1.amazonaws.com", "GET /b/k?X-Amz-Signature=1", "").status, 400);
    EXPECT_EQ(send("sqs.eu-west-1.amazonaws.com", "POST /", "Content-Length: 17\r\n", std::string(17, 'z')).status,
              413);
    const std::string log = stop();
    EXPECT_NE(log.find("\"reason\":\"credential_unusable\""), std::string::npos) << log;
    EXPECT_NE(log.find("\"reason\":\"sigv4_unsupported\""), std::string::npos) << log;
    EXPECT_NE(log.find("\"reason\":\"body_too_large_to_sign\""), std::string::npos) << log;
}

TEST_F(Sigv4Test, BotocoreClientInTheSandboxWorksThroughVaultgate) {
    start();
    const auto result =
        run_command({"/usr/bin/python3", std::string(VAULTGATE_SOURCE_DIR) + "/tests/net/sigv4/sandbox_client.py",
                     std::to_string(proxy_->port()), pki_.proxy_ca_cert, std::to_string(origin_->port())},
                    "", {{"AWS_CONFIG_FILE", "/dev/null"}, {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"}}, 60);
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("dynamodb 200"), std::string::npos) << result.out << result.err;
    EXPECT_NE(result.out.find("s3 200"), std::string::npos) << result.out << result.err;
    const auto verdicts = origin_->verdicts();
    ASSERT_EQ(verdicts.size(), 2u);
    for (const auto& v : verdicts) {
        EXPECT_EQ(v["verdict"], "ok") << v.dump();
        EXPECT_EQ(v["access_key"], aws_access_key_id);
    }
    EXPECT_EQ(verdicts[0]["service"], "dynamodb");
    EXPECT_EQ(seen_header(verdicts[0], "x-amz-security-token"), std::vector<std::string>{aws_session_token});
    EXPECT_EQ(verdicts[1]["service"], "s3");
    EXPECT_EQ(verdicts[1]["target"], "/sandbox-bucket/reports/2026%20q4.txt");
    // The placeholder token the SDK sent is gone where no session_token is configured.
    EXPECT_TRUE(seen_header(verdicts[1], "x-amz-security-token").empty());
}

}  // namespace
}  // namespace vaultgate::test
