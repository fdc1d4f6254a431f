// The aws-sigv4 step's decisions on a plan: refusals before any byte is read,
// the payload hash's source, the switch to a buffered body, and the signing
// under the binding's vault keys.
#include "vaultgate/state/sigv4_step.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

class Sigv4StepTest : public ::testing::Test {
protected:
    Sigv4StepTest() {
        vault_.name = "aws";
        vault_.credentials.emplace("AKID", Secret("AKIAIOSFODNN7EXAMPLE"));
        vault_.credentials.emplace("SECRET", Secret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"));
        vault_.credentials.emplace("TOKEN", Secret("session-token-value"));
        service_.id = "aws/0";
        service_.config.auth.type = AuthType::aws_sigv4;
        service_.config.auth.access_key_id = "AKID";
        service_.config.auth.secret_access_key = "SECRET";
    }

    RequestPlan plan(const std::string& host, const std::string& target, std::vector<Header> extra = {}) const {
        RequestPlan p;
        p.binding = Binding{&vault_, &service_, &vault_.credentials.at("SECRET")};
        p.outgoing.method = "PUT";
        p.outgoing.target = target;
        p.outgoing.headers.push_back({"Host", host});
        for (auto& h : extra) p.outgoing.headers.push_back(std::move(h));
        return p;
    }

    Vault vault_;
    ServiceBinding service_;
};

TEST_F(Sigv4StepTest, StreamingAwsChunkedAndPresignedAreRefusedWith400) {
    for (const auto& p :
         {plan("s3.amazonaws.com", "/b/k", {{"X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}}),
          plan("s3.amazonaws.com", "/b/k", {{"Content-Encoding", "aws-chunked"}}),
          plan("s3.amazonaws.com", "/b/k?X-Amz-Signature=00")}) {
        const SigningDecision d = plan_signing(p);
        EXPECT_EQ(d.refusal.status, 400);
        EXPECT_EQ(d.refusal.code, "sigv4_unsupported");
    }
}

TEST_F(Sigv4StepTest, AHostWithoutScopeNeedsTheOverride) {
    SigningDecision d = plan_signing(plan("api.internal.test", "/"));
    EXPECT_EQ(d.refusal.status, 502);
    EXPECT_EQ(d.refusal.code, "credential_unusable");
    EXPECT_NE(d.refusal.message.find("auth.region"), std::string::npos) << d.refusal.message;

    service_.config.auth.region = "eu-north-1";
    service_.config.auth.service = "execute-api";
    d = plan_signing(plan("api.internal.test", "/"));
    ASSERT_FALSE(d.refusal) << d.refusal.message;
    EXPECT_EQ(d.plan.scope.region, "eu-north-1");
    EXPECT_EQ(d.plan.scope.service, "execute-api");
}

TEST_F(Sigv4StepTest, TheClientsPayloadHashIsKeptElseTheBodyIsHashed) {
    SigningDecision d =
        plan_signing(plan("s3.eu-west-1.amazonaws.com", "/b/k", {{"X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"}}));
    ASSERT_FALSE(d.refusal);
    EXPECT_EQ(d.plan.payload_hash, "UNSIGNED-PAYLOAD");
    EXPECT_FALSE(d.plan.hash_body());
    EXPECT_EQ(d.plan.scope.region, "eu-west-1");
    EXPECT_EQ(d.plan.scope.service, "s3");

    d = plan_signing(
        plan("bedrock-runtime.us-east-1.amazonaws.com", "/model/m/invoke", {{"X-Amz-Content-Sha256", "not-a-hash"}}));
    ASSERT_FALSE(d.refusal);
    EXPECT_TRUE(d.plan.hash_body());
    EXPECT_EQ(d.plan.scope.service, "bedrock");
}

TEST_F(Sigv4StepTest, ABufferedBodyIsSentWithContentLengthAndNoContinue) {
    RequestPlan p = plan("sqs.us-east-1.amazonaws.com", "/", {{"Transfer-Encoding", "chunked"}});
    p.framing = BodyFraming{BodyKind::chunked, 0};
    p.expect_continue = true;
    const std::string body = "Action=ListQueues";
    send_from_buffer(p, body);
    EXPECT_EQ(p.outgoing.count("transfer-encoding"), 0u);
    EXPECT_EQ(p.outgoing.get("content-length"), std::to_string(body.size()));
    EXPECT_EQ(p.framing.kind, BodyKind::content_length);
    EXPECT_EQ(p.framing.length, body.size());
    EXPECT_FALSE(p.expect_continue);
    ASSERT_TRUE(p.buffered_body);
    EXPECT_EQ(*p.buffered_body, body);
}

TEST_F(Sigv4StepTest, SigningReplacesTheClientsFieldsAndAddsTheTokenWhenConfigured) {
    RequestPlan p = plan("sqs.us-east-1.amazonaws.com", "/?Action=ListQueues",
                         {{"authorization", "AWS4-HMAC-SHA256 placeholder"},
                          {"X-AMZ-DATE", "19990101T000000Z"},
                          {"x-amz-security-token", "placeholder"}});
    const auto now = std::chrono::system_clock::from_time_t(1440938160);  // 2015-08-30T12:36:00Z
    ASSERT_FALSE(sign_outgoing(p, {"us-east-1", "sqs"}, sigv4::payload_sha256_hex(""), now));
    EXPECT_EQ(p.outgoing.count("authorization"), 1u);
    EXPECT_EQ(p.outgoing.get("x-amz-date"), "20150830T123600Z");
    EXPECT_EQ(p.outgoing.count("x-amz-security-token"), 0u);
    EXPECT_EQ(p.outgoing.get("authorization")
                  ->rfind("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20150830/"
                          "us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, ",
                          0),
              0u);

    service_.config.auth.session_token = "TOKEN";
    p = plan("sqs.us-east-1.amazonaws.com", "/", {{"X-Amz-Security-Token", "placeholder"}});
    ASSERT_FALSE(sign_outgoing(p, {"us-east-1", "sqs"}, sigv4::payload_sha256_hex(""), now));
    EXPECT_EQ(p.outgoing.count("x-amz-security-token"), 1u);
    EXPECT_EQ(p.outgoing.get("x-amz-security-token"), "session-token-value");
    EXPECT_NE(p.outgoing.get("authorization")->find("x-amz-security-token"), std::string::npos);
}

TEST_F(Sigv4StepTest, AnUnusableKeyIsRefusedWithoutNamingIt) {
    vault_.credentials["AKID"] = Secret("AKIA WITH SPACE");
    RequestPlan p = plan("sqs.us-east-1.amazonaws.com", "/");
    const Refusal r =
        sign_outgoing(p, {"us-east-1", "sqs"}, sigv4::payload_sha256_hex(""), std::chrono::system_clock::now());
    EXPECT_EQ(r.status, 502);
    EXPECT_EQ(r.code, "credential_unusable");
    EXPECT_EQ(r.message.find("AKIA"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace vaultgate
