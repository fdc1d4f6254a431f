// `vaultgate bootstrap` over more than one run: --vault reuses a vault,
// --cleanup removes what a run made and nothing else, and every argument is
// checked before the server changes. Each test asks the admin API afterwards
// what it holds.
#include "bootstrap_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace vaultgate::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The session id from "... --cleanup ses_...`" on stderr.
std::string cleanup_handle(const std::string& err) {
    const std::string marker = "--cleanup ";
    const auto at = err.rfind(marker);
    if (at == std::string::npos) return {};
    const auto start = at + marker.size();
    return err.substr(start, err.find('`', start) - start);
}

const json* credential(const json& vault, const std::string& name) {
    for (const auto& c : vault["credentials"])
        if (c["name"] == name) return &c;
    return nullptr;
}

TEST_F(BootstrapTest, ARerunWithVaultReusesTheVaultRotatesTheKeyAndKeepsTheBinding) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto first = bootstrap("env", platform_env());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    auto second = bootstrap("env", platform_env());
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_NE(second.err.find("rotated COMPOSIO_API_KEY"), std::string::npos) << second.err;
    EXPECT_NE(second.err.find("COMPOSIO_API_KEY is already bound to backend.composio.test"), std::string::npos)
        << second.err;

    auto vaults = api_vaults();
    ASSERT_EQ(vaults.size(), 1u);
    EXPECT_EQ(vaults[0]["name"], "composio-sbx");
    const json* key = credential(vaults[0], "COMPOSIO_API_KEY");
    ASSERT_NE(key, nullptr);
    EXPECT_EQ((*key)["version"], 2);
    EXPECT_EQ(vaults[0]["services"].size(), 1u);
}

TEST_F(BootstrapTest, CleanupRemovesTheSessionAndTheVaultTheRunCreated) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot = bootstrap("env", platform_env());
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    const std::string session = cleanup_handle(boot.err);
    ASSERT_EQ(session.rfind("ses_", 0), 0u) << boot.err;
    EXPECT_TRUE(fs::exists(state_dir() + "/vaultgate/bootstrap/" + session + ".json"));
    ASSERT_EQ(api_vaults().size(), 1u);

    auto cleanup = run_bootstrap({"--cleanup", session});
    EXPECT_EQ(cleanup.exit_code, 0) << cleanup.err;
    EXPECT_TRUE(api_vaults().empty());
    EXPECT_EQ(admin("DELETE", "/v1/sessions/" + session).status, 404);
    EXPECT_FALSE(fs::exists(state_dir() + "/vaultgate/bootstrap/" + session + ".json"));

    // Done once: the session is unknown now.
    auto again = run_bootstrap({"--cleanup", session});
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.err.find("unknown session " + session), std::string::npos) << again.err;
}

TEST_F(BootstrapTest, CleanupLeavesAVaultTheRunFoundAndWhatWasInItAlone) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto made = admin("POST", "/v1/vaults", R"({"name":"team"})");
    ASSERT_EQ(made.status, 201) << made.body;
    const std::string vault_id = json::parse(made.body)["id"];
    ASSERT_EQ(
        admin("POST", "/v1/vaults/" + vault_id + "/credentials", R"({"name":"OTHER_TOKEN","value":"other-1"})").status,
        201);

    auto boot = run_bootstrap({"--vault", "team", "--out-dir", dir_.file("sandbox")}, platform_env());
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    auto cleanup = run_bootstrap({"--cleanup", cleanup_handle(boot.err)});
    EXPECT_EQ(cleanup.exit_code, 0) << cleanup.err;

    auto vaults = api_vaults();
    ASSERT_EQ(vaults.size(), 1u);
    EXPECT_EQ(vaults[0]["id"], vault_id);
    EXPECT_NE(credential(vaults[0], "OTHER_TOKEN"), nullptr);
    EXPECT_EQ(credential(vaults[0], "COMPOSIO_API_KEY"), nullptr);  // the run's own
    EXPECT_TRUE(vaults[0]["services"].empty());
}

TEST_F(BootstrapTest, CleanupKeepsACreatedVaultThatAnotherSessionUses) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto first = bootstrap("env", platform_env());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    auto second = bootstrap("env", platform_env());
    ASSERT_EQ(second.exit_code, 0) << second.err;

    auto cleanup = run_bootstrap({"--cleanup", cleanup_handle(first.err)});
    EXPECT_EQ(cleanup.exit_code, 0) << cleanup.err;
    EXPECT_NE(cleanup.err.find("kept"), std::string::npos) << cleanup.err;
    ASSERT_EQ(api_vaults().size(), 1u);

    // Once the other session is gone, the first run's cleanup finishes.
    EXPECT_EQ(run_bootstrap({"--cleanup", cleanup_handle(second.err)}).exit_code, 0);
    auto finish = run_bootstrap({"--cleanup", cleanup_handle(first.err)});
    EXPECT_EQ(finish.exit_code, 0) << finish.err;
    EXPECT_TRUE(api_vaults().empty());
}

TEST_F(BootstrapTest, CleanupOfAnUnknownSessionIsAnError) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto cleanup = run_bootstrap({"--cleanup", "ses_aaaaaaaaaaaaaaaaaaaa"});
    EXPECT_EQ(cleanup.exit_code, 1);
    EXPECT_NE(cleanup.err.find("unknown session ses_aaaaaaaaaaaaaaaaaaaa"), std::string::npos) << cleanup.err;
    auto traversal = run_bootstrap({"--cleanup", "../../x"});
    EXPECT_EQ(traversal.exit_code, 2) << traversal.err;
}

TEST_F(BootstrapTest, ATtlOverTheServersLimitWritesNothing) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot =
        run_bootstrap({"--vault", "composio-sbx", "--ttl", "86401", "--out-dir", dir_.file("sandbox")}, platform_env());
    EXPECT_EQ(boot.exit_code, 2);
    EXPECT_NE(boot.err.find("--ttl must be a whole number from 1 to 86400"), std::string::npos) << boot.err;
    EXPECT_TRUE(api_vaults().empty());
    EXPECT_FALSE(fs::exists(dir_.file("sandbox")));
    EXPECT_FALSE(fs::exists(state_dir()));
}

TEST_F(BootstrapTest, EveryBadArgumentFailsBeforeAnythingIsWritten) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    const std::string a_file = dir_.write("plain-file", "x");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--format", "xml"}, platform_env()},
        {{"--secret", "1BAD"}, platform_env()},
        {{"--secret", "MISSING_TOKEN"}, platform_env()},
        {{"--vault", "no spaces allowed"}, platform_env()},
        {{"--out-dir", a_file}, platform_env()},
        {{"--ttl", "0"}, platform_env()},
        {{}, "{\"A\":1}"},
        {{}, "not json"},
        {{}, json{{"LOCAL_URL", "https://localhost:8443"}, {"LOCAL_API_KEY", "k-12345678"}}.dump()},
        {{"stray-positional"}, platform_env()},
    };
    for (const auto& [args, input] : cases) {
        auto with_vault = args;
        with_vault.insert(with_vault.end(), {"--vault", "composio-sbx"});
        if (args.size() == 2 && args[0] == "--vault") with_vault = args;
        auto boot = run_bootstrap(with_vault, input);
        EXPECT_EQ(boot.exit_code, 2) << (args.empty() ? input : args.front()) << ": " << boot.err;
    }
    EXPECT_TRUE(api_vaults().empty());
    EXPECT_FALSE(fs::exists(state_dir()));
    EXPECT_EQ(backend_.requests().size(), 0u);
}

TEST_F(BootstrapTest, HelpAndUnknownOptionsChangeNothing) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto help = run_bootstrap({"--vault", "composio-sbx", "--help"}, platform_env());
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_NE(help.out.find("--cleanup"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--ttl"), std::string::npos) << help.out;

    auto unknown = run_bootstrap({"--vault", "composio-sbx", "--frobnicate"}, platform_env());
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("unknown option '--frobnicate'"), std::string::npos) << unknown.err;

    auto both = run_bootstrap({"--cleanup", "ses_aaaaaaaaaaaaaaaaaaaa", "--vault", "composio-sbx"});
    EXPECT_EQ(both.exit_code, 2) << both.err;

    EXPECT_TRUE(api_vaults().empty());
    EXPECT_FALSE(fs::exists(state_dir()));
}

}  // namespace
}  // namespace vaultgate::test
