#pragma once
// `vaultgate serve` as a child process with a TLS upstream bound in its
// config's resolve map, and `vaultgate bootstrap` run against it with a
// Composio-shaped env; shared by the bootstrap test files.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vaultgate::test {

inline constexpr const char* composio_key = "ak_live_composio-REAL-KEY-7f3a9c";

class BootstrapTest : public ::testing::Test {
protected:
    BootstrapTest()
        : pki_(dir_),
          backend_files_(pki_.server_files(dir_, "backend.composio.test")),
          backend_(backend_files_.first, backend_files_.second) {
        auto yaml = serve_config(dir_, pki_, 443, 443);
        yaml.replace(yaml.find("    new.test: 127.0.0.1\n"), 0, "    backend.composio.test: 127.0.0.1\n");
        auto path = dir_.write("vaultgate.yaml", yaml);
        proc_ = std::make_unique<ServeProcess>(path);
        proc_->forbid_in_stderr(composio_key);
    }

    ~BootstrapTest() override {
        if (proc_ && proc_->started()) {
            proc_->signal(SIGTERM);
            proc_->wait_exit();
        }
    }

    std::string admin_url() const { return "http://127.0.0.1:" + std::to_string(proc_->admin_port()); }

    // `vaultgate bootstrap` with the admin options and `args`; the cleanup
    // records go to the test's own state directory.
    CommandResult run_bootstrap(const std::vector<std::string>& args, const std::string& input = "",
                                int timeout_s = 60) {
        std::vector<std::string> argv = {VAULTGATE_BINARY, "bootstrap",    "--admin",
                                         admin_url(),      "--token-file", dir_.file("admin.token")};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, input, {{"XDG_STATE_HOME", state_dir()}}, timeout_s);
    }

    CommandResult bootstrap(const std::string& format, const std::string& input) {
        return run_bootstrap({"--vault", "composio-sbx", "--format", format, "--out-dir", dir_.file("sandbox")}, input);
    }

    std::string platform_env() const {
        return nlohmann::json{{"BACKEND_URL", "https://backend.composio.test:" + std::to_string(backend_.port())},
                              {"COMPOSIO_TOOLROUTER_SESSION_ID", "trs_123"},
                              {"COMPOSIO_API_KEY", composio_key}}
            .dump();
    }

    std::string state_dir() const { return dir_.file("state"); }

    HttpResult admin(const std::string& method, const std::string& path, const std::string& body = "") {
        return admin_request(proc_->admin_port(), method, path, serve_admin_token, body);
    }

    // The API vaults (config vaults left out), as the admin API lists them.
    std::vector<nlohmann::json> api_vaults() {
        auto list = admin("GET", "/v1/vaults");
        EXPECT_EQ(list.status, 200) << list.body;
        std::vector<nlohmann::json> out;
        const auto body = nlohmann::json::parse(list.body);  // kept alive for the loop
        for (const auto& v : body["vaults"])
            if (v["source"] == "api") out.push_back(v);
        return out;
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> backend_files_;
    RecordingUpstream backend_;
    std::unique_ptr<ServeProcess> proc_;
};

}  // namespace vaultgate::test
