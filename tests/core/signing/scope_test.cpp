// Region and service from endpoint hosts. The credential scope is
// date/REGION/SERVICE; a host read the wrong way round signs with the two
// swapped, so every row checks both, and the scope they end up in.
#include "vaultgate/signing/sigv4.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

namespace vaultgate::sigv4 {
namespace {

// "region/service", or the reason it could not be derived.
std::string scope_of(std::string_view host, std::string_view region = "", std::string_view service = "") {
    std::string why;
    const std::optional<Scope> scope = derive_scope(host, region, service, &why);
    return scope ? scope->region + "/" + scope->service : "no scope: " + why;
}

struct Row {
    const char* host;
    const char* region;
    const char* service;
};

TEST(DeriveScope, EndpointForms) {
    const Row rows[] = {
        // service.region.amazonaws.com
        {"sts.eu-west-1.amazonaws.com", "eu-west-1", "sts"},
        {"dynamodb.ap-southeast-2.amazonaws.com", "ap-southeast-2", "dynamodb"},
        {"ec2.us-gov-west-1.amazonaws.com", "us-gov-west-1", "ec2"},
        {"lambda.cn-north-1.amazonaws.com.cn", "cn-north-1", "lambda"},
        {"abc123.execute-api.us-east-2.amazonaws.com", "us-east-2", "execute-api"},
        {"runtime.sagemaker.eu-central-1.amazonaws.com", "eu-central-1", "sagemaker"},
        // Bedrock's endpoint prefixes sign as "bedrock".
        {"bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", "bedrock"},
        {"bedrock-agent-runtime.us-west-2.amazonaws.com", "us-west-2", "bedrock"},
        {"bedrock.us-west-2.amazonaws.com", "us-west-2", "bedrock"},
        {"bedrock-runtime-fips.us-east-1.amazonaws.com", "us-east-1", "bedrock"},
        {"email.eu-west-1.amazonaws.com", "eu-west-1", "ses"},
        // fips and dualstack forms.
        {"sts-fips.us-east-2.amazonaws.com", "us-east-2", "sts"},
        {"dynamodb.fips.us-east-1.amazonaws.com", "us-east-1", "dynamodb"},
        {"ec2.us-east-1.api.aws", "us-east-1", "ec2"},
        // S3 path style.
        {"s3.us-west-2.amazonaws.com", "us-west-2", "s3"},
        {"s3.amazonaws.com", "us-east-1", "s3"},
        {"s3.dualstack.eu-west-1.amazonaws.com", "eu-west-1", "s3"},
        {"s3-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1", "s3"},
        {"s3-us-west-2.amazonaws.com", "us-west-2", "s3"},
        {"s3-external-1.amazonaws.com", "us-east-1", "s3"},
        {"s3.cn-northwest-1.amazonaws.com.cn", "cn-northwest-1", "s3"},
        // S3 virtual-host style, including buckets whose names look like labels.
        {"my-bucket.s3.eu-central-1.amazonaws.com", "eu-central-1", "s3"},
        {"my-bucket.s3.amazonaws.com", "us-east-1", "s3"},
        {"my.dotted.bucket.s3.ap-south-1.amazonaws.com", "ap-south-1", "s3"},
        {"s3.bucket.s3.us-east-2.amazonaws.com", "us-east-2", "s3"},
        {"us-west-1.s3.eu-west-3.amazonaws.com", "eu-west-3", "s3"},
        {"bucket.s3.dualstack.us-east-1.amazonaws.com", "us-east-1", "s3"},
        {"ap-123456789012.s3-accesspoint.us-west-2.amazonaws.com", "us-west-2", "s3"},
        {"bucket.vpce-0a1b2c3d-4e5f.s3.us-east-1.vpce.amazonaws.com", "us-east-1", "s3"},
        {"vpce-0a1b2c3d-4e5f.bedrock-runtime.us-east-1.vpce.amazonaws.com", "us-east-1", "bedrock"},
        {"mybucket-123456789012.s3-object-lambda.us-east-1.amazonaws.com", "us-east-1", "s3-object-lambda"},
        // Global endpoints.
        {"sts.amazonaws.com", "us-east-1", "sts"},
        {"iam.amazonaws.com", "us-east-1", "iam"},
        {"route53.amazonaws.com", "us-east-1", "route53"},
        // Legacy region-first form.
        {"search-domain-abc.us-west-1.es.amazonaws.com", "us-west-1", "es"},
        // Case, a port and the root dot do not matter.
        {"Bedrock-Runtime.US-EAST-1.AmazonAWS.com", "us-east-1", "bedrock"},
        {"sts.eu-west-1.amazonaws.com:443", "eu-west-1", "sts"},
        {"s3.amazonaws.com.", "us-east-1", "s3"},
    };
    for (const Row& row : rows) EXPECT_EQ(scope_of(row.host), std::string(row.region) + "/" + row.service) << row.host;
}

TEST(DeriveScope, RegionAndServiceNotSwapped) {
    // The two labels of the common form, in the order the credential scope wants.
    const auto scope = derive_scope("bedrock-runtime.us-west-2.amazonaws.com", "", "", nullptr);
    ASSERT_TRUE(scope);
    EXPECT_EQ(credential_scope("20260101T000000Z", *scope), "20260101/us-west-2/bedrock/aws4_request");
    EXPECT_EQ(scope_of("s3.eu-west-1.amazonaws.com"), "eu-west-1/s3");
    // A bucket named like a region is not taken for the region, nor the region for a service.
    EXPECT_EQ(scope_of("eu-west-1.s3.us-east-2.amazonaws.com"), "us-east-2/s3");
    // Each override replaces only its own half.
    EXPECT_EQ(scope_of("bedrock-runtime.us-east-1.amazonaws.com", "eu-central-1"), "eu-central-1/bedrock");
    EXPECT_EQ(scope_of("bedrock-runtime.us-east-1.amazonaws.com", "", "execute-api"), "us-east-1/execute-api");
}

TEST(DeriveScope, OverridesServeHostsThatNameNothing) {
    EXPECT_EQ(scope_of("localhost:9000", "us-east-1", "s3"), "us-east-1/s3");
    EXPECT_EQ(scope_of("account.r2.cloudflarestorage.com", "auto", "s3"), "auto/s3");
}

TEST(DeriveScope, UnderivableHostsSayWhatToSet) {
    struct Case {
        const char* host;
        const char* region;
        const char* service;
        const char* why_mentions;
    };
    const Case cases[] = {
        {"api.example.com", "", "", "set region and service"},
        {"localhost", "us-east-1", "", "set service"},
        {"localhost", "", "s3", "set region"},
        {"amazonaws.com", "", "", "set region and service"},
        {"ec2.amazonaws.com", "", "", "set region and service"},
        {"s3.amazonaws.com.cn", "", "", "set region"},
        {"evil-amazonaws.com", "", "", "set region and service"},
        {"sts.us-east-1.amazonaws.com.evil.com", "", "", "set region and service"},
        {"[::1]:443", "", "", "set region and service"},
        {"sts.amazonaws.com", "US-EAST-1", "", "not a valid AWS region"},
        {"sts.amazonaws.com", "", "s3/x", "not a valid AWS service"},
        {"sts.amazonaws.com", "us-east-1\r\nX: y", "", "not a valid AWS region"},
        // Bytes no host name holds never reach the scope.
        {"bedrock\x01.us-west-2.amazonaws.com", "", "", "set region and service"},
        {"x.bed_rock.us-west-2.amazonaws.com", "", "", "set region and service"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.host);
        std::string why;
        EXPECT_FALSE(derive_scope(c.host, c.region, c.service, &why));
        EXPECT_NE(why.find(c.why_mentions), std::string::npos) << why;
        EXPECT_EQ(why.find(c.host), std::string::npos) << "the message must not echo the host";
    }
}

}  // namespace
}  // namespace vaultgate::sigv4
