// sign_request on whole heads: what it removes, adds and signs, and what it
// refuses. Signatures are checked by recomputing them from the signed head
// with the pieces the published vectors pin down.
#include "vaultgate/signing/sigv4.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vaultgate::sigv4 {
namespace {

const Secret secret_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
const Secret session_token("FwoGZXIvYXdzEXAMPLEsessionTOKEN/with+base64==");
constexpr std::string_view key_id = "AKIDEXAMPLE";
const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));  // 2026-01-01
const Scope s3_scope{"us-east-1", "s3"};
const Scope bedrock_scope{"us-west-2", "bedrock"};

RequestHead client_head() {
    RequestHead head;
    head.method = "POST";
    head.target = "/model/anthropic.claude-v2%3A1/invoke";
    head.headers = {{"Host", "bedrock-runtime.us-west-2.amazonaws.com"},
                    {"Content-Type", "application/json"},
                    {"Authorization", "AWS4-HMAC-SHA256 Credential=PLACEHOLDER/x, SignedHeaders=host, Signature=00"},
                    {"authorization", "second copy"},
                    {"X-AMZ-DATE", "20000101T000000Z"},
                    {"x-amz-date", "20000101T000000Z"},
                    {"X-Amz-Security-Token", "client-placeholder-token"},
                    {"x-amz-security-token", "another"},
                    {"User-Agent", "aws-sdk-js/3"}};
    return head;
}

// The signature the head's own signed headers give, from the vector-tested pieces.
std::string recomputed_authorization(const RequestHead& head, const Scope& scope, std::string_view payload_hash) {
    const std::string date(*head.get("x-amz-date"));
    const auto headers = signed_headers(head);
    const std::string canonical =
        canonical_request(head.method, head.target, headers, payload_hash, is_s3_service(scope.service));
    return authorization_value(key_id, date, scope, signed_header_list(headers),
                               signature(secret_key, date, scope, string_to_sign(date, scope, canonical)));
}

TEST(SignRequest, ReplacesEveryClientCopyOfTheThreeHeaders) {
    RequestHead head = client_head();
    const std::string hash = payload_sha256_hex("{}");
    sign_request(head, bedrock_scope, Keys{key_id, secret_key, nullptr}, hash, when);
    EXPECT_EQ(head.count("authorization"), 1u);
    EXPECT_EQ(head.count("x-amz-date"), 1u);
    EXPECT_EQ(head.get("x-amz-date").value_or(""), "20260101T000000Z");
    // No session token configured: the client's token is removed, not forwarded.
    EXPECT_EQ(head.count("x-amz-security-token"), 0u);
    EXPECT_TRUE(head.get("authorization")
                    ->starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-west-2/bedrock/aws4_request, "
                                  "SignedHeaders=content-type;host;x-amz-date, Signature="));
    EXPECT_EQ(*head.get("authorization"), recomputed_authorization(head, bedrock_scope, hash));
    EXPECT_EQ(head.count("x-amz-content-sha256"), 0u);  // only S3 gets one added
    EXPECT_EQ(head.get("user-agent").value_or(""), "aws-sdk-js/3");
}

TEST(SignRequest, SessionTokenIsSetAndSigned) {
    RequestHead head = client_head();
    const std::string hash = payload_sha256_hex("{}");
    sign_request(head, bedrock_scope, Keys{key_id, secret_key, &session_token}, hash, when);
    EXPECT_EQ(head.count("x-amz-security-token"), 1u);
    EXPECT_EQ(head.get("x-amz-security-token").value_or(""), session_token.reveal());
    EXPECT_NE(head.get("authorization")->find("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,"),
              std::string::npos);
    EXPECT_EQ(*head.get("authorization"), recomputed_authorization(head, bedrock_scope, hash));
}

TEST(SignRequest, SigningTwiceGivesOneSetOfHeaders) {
    RequestHead head = client_head();
    const std::string hash = payload_sha256_hex("");
    sign_request(head, bedrock_scope, Keys{key_id, secret_key, &session_token}, hash, when);
    const std::string first(*head.get("authorization"));
    sign_request(head, bedrock_scope, Keys{key_id, secret_key, &session_token}, hash, when);
    EXPECT_EQ(head.count("authorization"), 1u);
    EXPECT_EQ(head.count("x-amz-security-token"), 1u);
    EXPECT_EQ(*head.get("authorization"), first);
}

TEST(SignRequest, S3GetsAPayloadHashHeaderThatMatchesTheSignedHash) {
    RequestHead head;
    head.method = "PUT";
    head.target = "/bucket/dir%2Fname//file.txt";
    head.headers = {{"Host", "s3.us-east-1.amazonaws.com"}, {"X-Amz-Meta-Note", "  a   b  "}};
    const std::string hash = payload_sha256_hex("data");
    sign_request(head, s3_scope, Keys{key_id, secret_key, nullptr}, hash, when);
    EXPECT_EQ(head.get("x-amz-content-sha256").value_or(""), hash);
    EXPECT_NE(head.get("authorization")->find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-note,"),
              std::string::npos);
    EXPECT_EQ(*head.get("authorization"), recomputed_authorization(head, s3_scope, hash));
    // The path went out as sent: the encoded slash and the double slash stay.
    EXPECT_EQ(head.target, "/bucket/dir%2Fname//file.txt");

    // A client hash that disagrees with the one signed is corrected, and only one copy remains.
    RequestHead wrong = head;
    wrong.headers.push_back({"x-amz-content-sha256", std::string(64, '0')});
    sign_request(wrong, s3_scope, Keys{key_id, secret_key, nullptr}, hash, when);
    EXPECT_EQ(wrong.count("x-amz-content-sha256"), 1u);
    EXPECT_EQ(wrong.get("x-amz-content-sha256").value_or(""), hash);

    // UNSIGNED-PAYLOAD from the client stays as it is.
    RequestHead unsigned_head = head;
    unsigned_head.set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD");
    sign_request(unsigned_head, s3_scope, Keys{key_id, secret_key, nullptr}, unsigned_payload, when);
    EXPECT_EQ(unsigned_head.get("x-amz-content-sha256").value_or(""), "UNSIGNED-PAYLOAD");
    EXPECT_EQ(*unsigned_head.get("authorization"), recomputed_authorization(unsigned_head, s3_scope, unsigned_payload));
}

// The rule: the signed set is host, content-type and x-amz-*. What vaultgate
// adds or rewrites on the way out (Host before signing; Content-Length,
// Transfer-Encoding, Connection, Upgrade, Expect, Accept-Encoding, and every
// hop-by-hop field) is outside it, so nothing changed after signing can
// invalidate the signature.
TEST(SignRequest, HeadersVaultgateAddsOrChangesAreNeverSigned) {
    RequestHead head;
    head.method = "PUT";
    head.target = "/";
    head.headers = {{"Host", "sts.amazonaws.com"},
                    {"Content-Length", "4"},
                    {"Transfer-Encoding", "chunked"},
                    {"Connection", "keep-alive, X-Amz-Meta-Hop"},
                    {"Keep-Alive", "timeout=5"},
                    {"Upgrade", "websocket"},
                    {"Expect", "100-continue"},
                    {"Accept-Encoding", "gzip"},
                    {"TE", "trailers"},
                    {"Proxy-Authorization", "Basic eA=="},
                    {"User-Agent", "curl"},
                    {"X-Forwarded-For", "10.0.0.1"},
                    {"X-Amzn-Trace-Id", "Root=1"},
                    {"X-Amz-Meta-Hop", "dropped with the connection"},
                    {"X-Amz-Target", "AWSSecurityTokenServiceV20110615.GetCallerIdentity"}};
    sign_request(head, Scope{"us-east-1", "sts"}, Keys{key_id, secret_key, nullptr}, payload_sha256_hex("data"), when);
    EXPECT_NE(head.get("authorization")->find("SignedHeaders=host;x-amz-date;x-amz-target,"), std::string::npos)
        << *head.get("authorization");

    // Changing any of them after signing leaves the signature valid.
    const std::string signed_auth(*head.get("authorization"));
    for (const char* name : {"Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Expect",
                             "Accept-Encoding", "User-Agent", "X-Amz-Meta-Hop"})
        head.remove(name);
    head.headers.push_back({"Content-Length", "10"});
    head.headers.push_back({"Connection", "close"});
    EXPECT_EQ(recomputed_authorization(head, Scope{"us-east-1", "sts"}, payload_sha256_hex("data")), signed_auth);
}

TEST(SignRequest, RefusesWhatItCannotSignWithoutNamingSecrets) {
    const std::string hash = payload_sha256_hex("");
    auto message_of = [&](RequestHead head, const Keys& keys, std::string_view payload, const Scope& scope) {
        try {
            sign_request(head, scope, keys, payload, when);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("(signed)");
    };
    RequestHead ok = client_head();

    RequestHead absolute = ok;
    absolute.target = "https://bedrock-runtime.us-west-2.amazonaws.com/x";
    EXPECT_NE(message_of(absolute, Keys{key_id, secret_key}, hash, bedrock_scope).find("origin-form"),
              std::string::npos);

    RequestHead no_host = ok;
    no_host.remove("host");
    EXPECT_NE(message_of(no_host, Keys{key_id, secret_key}, hash, bedrock_scope).find("Host"), std::string::npos);
    RequestHead two_hosts = ok;
    two_hosts.headers.push_back({"host", "evil.example"});
    EXPECT_NE(message_of(two_hosts, Keys{key_id, secret_key}, hash, bedrock_scope).find("Host"), std::string::npos);

    EXPECT_NE(message_of(ok, Keys{key_id, secret_key}, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", bedrock_scope)
                  .find("payload hash"),
              std::string::npos);
    EXPECT_NE(message_of(ok, Keys{key_id, secret_key}, hash, Scope{"us-east-1/x", "s3"}).find("region"),
              std::string::npos);
    EXPECT_NE(message_of(ok, Keys{key_id, secret_key}, hash, Scope{"us-east-1", ""}).find("service"),
              std::string::npos);

    const std::string bad_id = "AKIDSECRET\r\nX-Injected: 1";
    const std::string id_message = message_of(ok, Keys{bad_id, secret_key}, hash, bedrock_scope);
    EXPECT_NE(id_message.find("access key id"), std::string::npos);
    EXPECT_EQ(id_message.find("AKIDSECRET"), std::string::npos);

    const Secret bad_token("tokenSECRETvalue\nX-Injected: 1");
    const std::string token_message = message_of(ok, Keys{key_id, secret_key, &bad_token}, hash, bedrock_scope);
    EXPECT_NE(token_message.find("session token"), std::string::npos);
    EXPECT_EQ(token_message.find("SECRET"), std::string::npos);

    const Secret empty_key;
    EXPECT_NE(message_of(ok, Keys{key_id, empty_key}, hash, bedrock_scope).find("secret access key"),
              std::string::npos);
    EXPECT_EQ(message_of(ok, Keys{key_id, secret_key}, hash, bedrock_scope), "(signed)");
}

TEST(SignRequest, TheSecretKeyIsInNoHeader) {
    RequestHead head = client_head();
    sign_request(head, bedrock_scope, Keys{key_id, secret_key, &session_token}, payload_sha256_hex(""), when);
    for (const Header& h : head.headers) EXPECT_EQ(h.value.find(secret_key.reveal()), std::string::npos) << h.name;
}

}  // namespace
}  // namespace vaultgate::sigv4
