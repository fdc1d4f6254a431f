// `vaultgate explain`: the real binary against a real server, as a table and as JSON.
#include "serve_process.hpp"
#include "temp_dir.hpp"
#include "test_pki.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* team_secret = "sk-explain-cli-SECRET-7777";

class ExplainCommandTest : public ::testing::Test {
protected:
    ExplainCommandTest() : pki_(dir_) {
        token_file_ = dir_.write("admin.token", std::string(serve_admin_token) + "\n");
        dir_.write("master.key", std::string(32, 'c'));
        std::string yaml = "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n";
        yaml += "ca: { cert: " + pki_.proxy_ca_cert + ", key: " + pki_.proxy_ca_key + " }\n";
        yaml += "upstream:\n  resolve: { internal.test: 10.20.30.40, api.bound.test: 127.0.0.1 }\n";
        yaml +=
            "store: { path: " + dir_.file("vaultgate.db") + ", master_key_file: " + dir_.file("master.key") + " }\n";
        yaml += "admin: { token_file: " + token_file_ + " }\n";
        yaml += "log: { access: " + dir_.file("access.log") + " }\n";
        yaml +=
            "vaults:\n  - name: team\n    credentials: { KEY: { env: VG_EXPLAIN_CLI_KEY } }\n"
            "    services:\n      - { host: api.bound.test, auth: { type: bearer, key: KEY } }\n"
            "sessions: { default: { vaults: [team], egress_policy: default } }\n"
            "egress_policies: { default: { allowed_domains: [internal.test] } }\n";
        server_ =
            std::make_unique<ServeProcess>(dir_.write("vaultgate.yaml", yaml),
                                           std::map<std::string, std::string>{{"VG_EXPLAIN_CLI_KEY", team_secret}});
        server_->forbid_in_stderr(team_secret);
    }

    void SetUp() override { ASSERT_TRUE(server_->started()) << server_->stderr_text(); }

    void TearDown() override {
        server_->signal(SIGTERM);
        EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
    }

    CommandResult explain(std::vector<std::string> extra) {
        std::vector<std::string> argv{VAULTGATE_BINARY, "explain",
                                      "--admin",        "http://127.0.0.1:" + std::to_string(server_->admin_port()),
                                      "--token-file",   token_file_};
        argv.insert(argv.end(), extra.begin(), extra.end());
        auto result = run_command(argv);
        EXPECT_EQ(result.out.find(team_secret), std::string::npos) << result.out;
        return result;
    }

    TempDir dir_;
    TestPki pki_;
    std::string token_file_;
    std::unique_ptr<ServeProcess> server_;
};

TEST_F(ExplainCommandTest, TableNamesTheRuleAndTheAddresses) {
    const auto r = explain({"https://internal.test/v1/items?page=2"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("ACTION      tunnel\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("DECIDED BY  allowed_domains: internal.test\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("REQUEST     GET https://internal.test:443/v1/items\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("SESSION     default, egress policy default\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("RESOLVED BY upstream.resolve\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ADDRESS      CLASS            ALLOWED  DECIDED BY\n"
                         "10.20.30.40  private_network  yes      upstream.resolve: internal.test\n"),
              std::string::npos)
        << r.out;
}

TEST_F(ExplainCommandTest, DeniedPrivateAddressAndBoundHost) {
    const auto denied = explain({"https://10.20.30.40/"});
    EXPECT_EQ(denied.exit_code, 0) << denied.err;
    EXPECT_NE(denied.out.find("ACTION      denied (403 ip_literal_not_allowed)\n"), std::string::npos) << denied.out;
    EXPECT_NE(denied.out.find("DECIDED BY  allowed_cidrs (no entry matches)\n"), std::string::npos) << denied.out;
    EXPECT_NE(
        denied.out.find("10.20.30.40  private_network  no       address_class: private_network (private_address)"),
        std::string::npos)
        << denied.out;

    const auto bound = explain({"--method", "POST", "https://api.bound.test/v1/chat"});
    EXPECT_EQ(bound.exit_code, 0) << bound.err;
    EXPECT_NE(bound.out.find("ACTION      mitm\n"), std::string::npos) << bound.out;
    EXPECT_NE(
        bound.out.find("BINDING     vault team, service team/0 (api.bound.test:443 /): bearer with credential KEY\n"),
        std::string::npos)
        << bound.out;
    EXPECT_NE(bound.out.find("REQUEST     POST https://api.bound.test:443/v1/chat\n"), std::string::npos) << bound.out;
}

TEST_F(ExplainCommandTest, JsonIsTheServersAnswer) {
    const json body{{"url", "http://internal.test/"}, {"session", "default"}};
    const auto api = admin_request(server_->admin_port(), "POST", "/v1/explain", serve_admin_token, body.dump());
    ASSERT_EQ(api.status, 200) << api.body;
    for (const std::string flag : {"--json", "--output=json"}) {
        const auto r = explain({flag, "--session", "default", "http://internal.test/"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(json::parse(r.out), json::parse(api.body)) << r.out;
    }
    EXPECT_EQ(json::parse(api.body)["reason"], "http_not_allowed");
}

TEST_F(ExplainCommandTest, Errors) {
    const auto unknown = explain({"--session", "ses_missing", "https://internal.test/"});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("session_not_found"), std::string::npos) << unknown.err;

    const auto bad_url = explain({"ftp://internal.test/"});
    EXPECT_EQ(bad_url.exit_code, 1);
    EXPECT_NE(bad_url.err.find("invalid_url"), std::string::npos) << bad_url.err;

    EXPECT_EQ(explain({}).exit_code, 2);
    EXPECT_EQ(explain({"--frobnicate", "https://internal.test/"}).exit_code, 2);
    EXPECT_EQ(explain({"--output", "yaml", "https://internal.test/"}).exit_code, 2);
    const auto help = run_command({VAULTGATE_BINARY, "explain", "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("--session"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace vaultgate::test
