// AWS's SDK variables in a bootstrap input: which are secrets, which form one
// credential set, and the region both SDK spellings get.
#include "vaultgate/credentials/aws_env.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

using Names = std::vector<std::string>;

TEST(AwsEnv, TheKeyPairIsSecretOnlyAsAPair) {
    std::string error;
    EnvList pair = {{"AWS_ACCESS_KEY_ID", "AKIA1"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t"}, {"AWS_REGION", "us-east-1"}};
    EXPECT_EQ(choose_secret_names(pair, {}, &error), (Names{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}));

    EnvList one = {{"AWS_ACCESS_KEY_ID", "AKIA1"}, {"AWS_SESSION_TOKEN", "tok"}};
    EXPECT_EQ(choose_secret_names(one, {}, &error), (Names{"AWS_SESSION_TOKEN"}));

    EnvList empty_secret = {{"AWS_ACCESS_KEY_ID", "AKIA1"}, {"AWS_SECRET_ACCESS_KEY", ""}};
    EXPECT_EQ(choose_secret_names(empty_secret, {}, &error), Names{});

    // --secret names exactly what is secret, AWS's names included.
    EXPECT_EQ(choose_secret_names(pair, {"AWS_SECRET_ACCESS_KEY"}, &error), (Names{"AWS_SECRET_ACCESS_KEY"}));
}

TEST(AwsEnv, CredentialSet) {
    std::vector<SecretVar> secrets;
    secrets.push_back({"AWS_SECRET_ACCESS_KEY", Secret(std::string("s"))});
    EXPECT_FALSE(find_aws_credential_set(secrets));
    secrets.push_back({"AWS_ACCESS_KEY_ID", Secret(std::string("a"))});
    auto set = find_aws_credential_set(secrets);
    ASSERT_TRUE(set);
    EXPECT_EQ(set->session_token, "");
    EXPECT_TRUE(in_aws_set(*set, "AWS_ACCESS_KEY_ID"));
    EXPECT_FALSE(in_aws_set(*set, "AWS_SESSION_TOKEN"));
    EXPECT_FALSE(in_aws_set(*set, ""));
    secrets.push_back({"AWS_SESSION_TOKEN", Secret(std::string("t"))});
    set = find_aws_credential_set(secrets);
    ASSERT_TRUE(set);
    EXPECT_EQ(set->session_token, "AWS_SESSION_TOKEN");
    EXPECT_TRUE(in_aws_set(*set, "AWS_SESSION_TOKEN"));
}

TEST(AwsEnv, RegionGetsBothSpellings) {
    EnvList vars = {{"AWS_DEFAULT_REGION", "eu-central-1"}};
    EXPECT_TRUE(complete_aws_region(vars));
    EXPECT_EQ(*find_env(vars, "AWS_REGION"), "eu-central-1");
    EXPECT_EQ(*find_env(vars, "AWS_DEFAULT_REGION"), "eu-central-1");

    // AWS_REGION wins where both are given; neither is overwritten.
    EnvList both = {{"AWS_REGION", "us-west-2"}, {"AWS_DEFAULT_REGION", "us-east-1"}};
    EXPECT_TRUE(complete_aws_region(both));
    EXPECT_EQ(*find_env(both, "AWS_REGION"), "us-west-2");
    EXPECT_EQ(*find_env(both, "AWS_DEFAULT_REGION"), "us-east-1");

    EnvList none = {{"AWS_REGION", ""}};
    EXPECT_FALSE(complete_aws_region(none));
}

}  // namespace
}  // namespace vaultgate
