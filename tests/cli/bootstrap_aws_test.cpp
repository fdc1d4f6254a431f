// AWS keys through the bootstrapper: the key pair is stored and bound as one
// aws-sigv4 service on AWS's endpoints, the sandbox gets placeholders and the
// region, and botocore (a real SDK) accepts what the sandbox gets.
#include "bootstrap_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* aws_key_id = "AKIAREALKEYID7F3A9C01";
constexpr const char* aws_secret = "wJalrREALsecretKEY/K7MDENG+bPxRfiCY7f3a9c";

std::string aws_env(bool with_token = false) {
    json env = {{"AWS_ACCESS_KEY_ID", aws_key_id}, {"AWS_SECRET_ACCESS_KEY", aws_secret}, {"AWS_REGION", "eu-west-1"}};
    if (with_token) env["AWS_SESSION_TOKEN"] = "FwoGZXIvYXdzEREALsessionTOKEN";
    return env.dump();
}

class BootstrapAwsTest : public BootstrapTest {
protected:
    BootstrapAwsTest() {
        proc_->forbid_in_stderr(aws_secret);
        proc_->forbid_in_stderr(aws_key_id);
    }

    json aws_vault() {
        auto detail = admin("GET", "/v1/vaults/composio-sbx");
        EXPECT_EQ(detail.status, 200) << detail.body;
        return json::parse(detail.body);
    }
};

TEST_F(BootstrapAwsTest, KeyPairIsBoundAsOneSigv4ServiceAndTheSandboxGetsPlaceholders) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot = bootstrap("json", aws_env(true));
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    for (const char* real : {aws_key_id, aws_secret, "FwoGZXIvYXdzEREALsessionTOKEN"}) {
        EXPECT_EQ(boot.out.find(real), std::string::npos);
        EXPECT_EQ(boot.err.find(real), std::string::npos);
    }
    const auto env = json::parse(boot.out);
    EXPECT_EQ(env["AWS_ACCESS_KEY_ID"], "vaultgate-placeholder-AWS_ACCESS_KEY_ID");
    EXPECT_EQ(env["AWS_SECRET_ACCESS_KEY"], "vaultgate-placeholder-AWS_SECRET_ACCESS_KEY");
    EXPECT_EQ(env["AWS_SESSION_TOKEN"], "vaultgate-placeholder-AWS_SESSION_TOKEN");
    EXPECT_EQ(env["AWS_REGION"], "eu-west-1");
    EXPECT_EQ(env["AWS_DEFAULT_REGION"], "eu-west-1");
    EXPECT_EQ(env["AWS_CA_BUNDLE"], env["SSL_CERT_FILE"]);
    EXPECT_NE(boot.err.find("bound the AWS keys to *.amazonaws.com (aws-sigv4)"), std::string::npos) << boot.err;

    const auto vault = aws_vault();
    ASSERT_EQ(vault["services"].size(), 1u) << vault.dump();
    const auto& service = vault["services"][0];
    EXPECT_EQ(service["host"], "*.amazonaws.com");
    EXPECT_EQ(service["port"], 443);
    EXPECT_EQ(service["auth_config"],
              (json{{"type", "aws-sigv4"},
                    {"access_key_id", "AWS_ACCESS_KEY_ID"},
                    {"secret_access_key", "AWS_SECRET_ACCESS_KEY"},
                    {"session_token", "AWS_SESSION_TOKEN"}}));

    // A second run with the same vault keeps the binding and rotates the keys.
    auto again = bootstrap("json", aws_env(true));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.err.find("already bound to *.amazonaws.com"), std::string::npos) << again.err;
    EXPECT_EQ(aws_vault()["services"].size(), 1u);
}

TEST_F(BootstrapAwsTest, BotocoreAcceptsThePrintedEnvironment) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot = bootstrap("json", aws_env());
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    const auto env = json::parse(boot.out);
    EXPECT_FALSE(env.contains("AWS_SESSION_TOKEN"));

    // The SDK reads its keys, region and CA bundle from the env alone, and signs.
    std::vector<std::string> argv = {"/usr/bin/env", "-i"};
    for (auto& [k, v] : env.items()) argv.push_back(k + "=" + v.get<std::string>());
    argv.insert(argv.end(), {"/usr/bin/python3", "-c",
                             "import botocore.session\n"
                             "from botocore.auth import SigV4Auth\n"
                             "from botocore.awsrequest import AWSRequest\n"
                             "s = botocore.session.get_session()\n"
                             "c = s.get_credentials()\n"
                             "print('KEY', c.access_key)\n"
                             "print('REGION', s.get_config_variable('region'))\n"
                             "client = s.create_client('sts')\n"
                             "print('VERIFY', client._endpoint.http_session._verify == "
                             "__import__('os').environ['SSL_CERT_FILE'])\n"
                             "r = AWSRequest(method='GET', url='https://sts.amazonaws.com/?Action=GetCallerIdentity')\n"
                             "SigV4Auth(c, 'sts', 'us-east-1').add_auth(r)\n"
                             "print('SIGNED', r.headers['Authorization'].split(',')[0])\n"});
    auto child = run_command(argv);
    ASSERT_EQ(child.exit_code, 0) << child.err;
    EXPECT_NE(child.out.find("KEY vaultgate-placeholder-AWS_ACCESS_KEY_ID"), std::string::npos) << child.out;
    EXPECT_NE(child.out.find("REGION eu-west-1"), std::string::npos) << child.out;
    EXPECT_NE(child.out.find("VERIFY True"), std::string::npos) << child.out;
    EXPECT_NE(child.out.find("SIGNED AWS4-HMAC-SHA256 Credential=vaultgate-placeholder-AWS_ACCESS_KEY_ID/"),
              std::string::npos)
        << child.out;
}

TEST_F(BootstrapAwsTest, OneKeyOfThePairAloneIsNoAwsCredential) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot = bootstrap("json", json{{"AWS_ACCESS_KEY_ID", aws_key_id}, {"AWS_REGION", "eu-west-1"}}.dump());
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    const auto env = json::parse(boot.out);
    // Not a secret by its name alone: passed through, nothing bound.
    EXPECT_EQ(env["AWS_ACCESS_KEY_ID"], aws_key_id);
    EXPECT_TRUE(aws_vault()["services"].empty());
}

TEST_F(BootstrapAwsTest, KeysWithoutARegionAreBoundWithAWarning) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot = bootstrap("json", json{{"AWS_ACCESS_KEY_ID", aws_key_id}, {"AWS_SECRET_ACCESS_KEY", aws_secret}}.dump());
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    EXPECT_NE(boot.err.find("AWS keys without AWS_REGION or AWS_DEFAULT_REGION"), std::string::npos) << boot.err;
    EXPECT_FALSE(json::parse(boot.out).contains("AWS_REGION"));
}

}  // namespace
}  // namespace vaultgate::test
