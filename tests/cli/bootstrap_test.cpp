// The session bootstrapper end to end: a Composio-shaped env goes in; a child
// process started with exactly the printed env runs Python's urllib (a real
// client that honours HTTPS_PROXY and SSL_CERT_FILE) against a local TLS
// upstream; the upstream receives the real key, the child never held it.
#include "bootstrap_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace vaultgate::test {
namespace {

using nlohmann::json;

TEST_F(BootstrapTest, PythonUrllibWithOnlyThePrintedEnvGetsTheRealKeyInjected) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto boot = bootstrap("json", platform_env());
    ASSERT_EQ(boot.exit_code, 0) << boot.err;
    EXPECT_EQ(boot.out.find(composio_key), std::string::npos);
    EXPECT_EQ(boot.err.find(composio_key), std::string::npos);
    auto env = json::parse(boot.out);
    for (const char* name :
         {"BACKEND_URL", "COMPOSIO_TOOLROUTER_SESSION_ID", "COMPOSIO_API_KEY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY",
          "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"})
        EXPECT_TRUE(env.contains(name)) << name;
    EXPECT_FALSE(env["COMPOSIO_API_KEY"].get<std::string>().empty());

    // The child gets exactly the printed env, nothing else.
    std::vector<std::string> argv = {"/usr/bin/env", "-i"};
    for (auto& [k, v] : env.items()) argv.push_back(k + "=" + v.get<std::string>());
    argv.insert(argv.end(),
                {"/usr/bin/python3", "-c",
                 "import os, urllib.request\n"
                 "url = os.environ['BACKEND_URL'] + '/api/v3/tool_router/session/' + "
                 "os.environ['COMPOSIO_TOOLROUTER_SESSION_ID'] + '/execute'\n"
                 "req = urllib.request.Request(url, data=b'{\"tool\":\"x\"}', method='POST', "
                 "headers={'x-api-key': os.environ['COMPOSIO_API_KEY'], 'content-type': 'application/json'})\n"
                 "print(urllib.request.urlopen(req, timeout=20).read().decode())\n"
                 "print('KEY_SEEN' if '" +
                     std::string(composio_key) + "' in repr(dict(os.environ)) else 'KEY_ABSENT')\n"});
    auto child = run_command(argv);
    EXPECT_EQ(child.exit_code, 0) << child.err;
    EXPECT_NE(child.out.find("ok"), std::string::npos) << child.out;
    EXPECT_NE(child.out.find("KEY_ABSENT"), std::string::npos) << child.out;

    auto reqs = backend_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].method, "POST");
    EXPECT_EQ(reqs[0].target, "/api/v3/tool_router/session/trs_123/execute");
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{composio_key});
    EXPECT_EQ(reqs[0].body, "{\"tool\":\"x\"}");
}

TEST_F(BootstrapTest, EveryFormatKeepsTheRealKeyOut) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    for (const char* format : {"env", "shell", "json"}) {
        auto boot = bootstrap(format, platform_env());
        EXPECT_EQ(boot.exit_code, 0) << format << ": " << boot.err;
        EXPECT_EQ(boot.out.find(composio_key), std::string::npos) << format;
        EXPECT_NE(boot.out.find("HTTPS_PROXY"), std::string::npos) << format;
    }
    auto bad = bootstrap("env", "[1,2,3]");
    EXPECT_EQ(bad.exit_code, 2);
}

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool is_regular_file_holding_the_ca(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           file_text(path).find("-----BEGIN CERTIFICATE-----") != std::string::npos;
}

// Whoever can write to --out-dir (a sandbox sharing it, say) may plant things
// at the names bootstrap writes. A FIFO must not hang it, a symlink must not
// make it write elsewhere; a bounded run shows the first, the link's untouched
// target the second.
TEST_F(BootstrapTest, PlantedFifosAndSymlinksInTheOutDirAreNeitherOpenedNorFollowed) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    const TempDir elsewhere;
    const auto outside_a = elsewhere.write("a.txt", "outside A\n", 0644);
    const auto outside_b = elsewhere.write("b.txt", "outside B\n", 0644);
    const auto out_dir = dir_.file("sandbox");
    ASSERT_EQ(::mkdir(out_dir.c_str(), 0700), 0);
    const auto run = [&] {
        return run_bootstrap({"--vault", "composio-sbx", "--format", "json", "--out-dir", out_dir}, platform_env(),
                             /*timeout_s=*/20);
    };

    // At the temporary names earlier versions used.
    ASSERT_EQ(::mkfifo((out_dir + "/ca.pem.tmp").c_str(), 0600), 0);
    ASSERT_EQ(::symlink(outside_a.c_str(), (out_dir + "/ca-bundle.pem.tmp").c_str()), 0);
    auto boot = run();
    EXPECT_EQ(boot.exit_code, 0) << boot.err;
    EXPECT_EQ(file_text(outside_a), "outside A\n");
    EXPECT_TRUE(is_regular_file_holding_the_ca(out_dir + "/ca.pem"));
    EXPECT_TRUE(is_regular_file_holding_the_ca(out_dir + "/ca-bundle.pem"));

    // At the final names: the rename replaces the link or FIFO itself.
    std::filesystem::remove(out_dir + "/ca.pem");
    std::filesystem::remove(out_dir + "/ca-bundle.pem");
    ASSERT_EQ(::symlink(outside_b.c_str(), (out_dir + "/ca.pem").c_str()), 0);
    ASSERT_EQ(::mkfifo((out_dir + "/ca-bundle.pem").c_str(), 0600), 0);
    boot = run();
    EXPECT_EQ(boot.exit_code, 0) << boot.err;
    EXPECT_EQ(file_text(outside_b), "outside B\n");
    EXPECT_TRUE(is_regular_file_holding_the_ca(out_dir + "/ca.pem"));
    EXPECT_TRUE(is_regular_file_holding_the_ca(out_dir + "/ca-bundle.pem"));

    // A directory at a final name is an error that says so.
    std::filesystem::remove(out_dir + "/ca.pem");
    std::filesystem::create_directory(out_dir + "/ca.pem");
    boot = run();
    EXPECT_EQ(boot.exit_code, 1) << boot.err;
    EXPECT_NE(boot.err.find("ca.pem: it is a directory"), std::string::npos) << boot.err;
    // No temporary file is left behind by any of the runs.
    for (const auto& e : std::filesystem::directory_iterator(out_dir)) {
        const auto name = e.path().filename().string();
        EXPECT_TRUE(name == "ca.pem" || name == "ca-bundle.pem" || name == "ca.pem.tmp" || name == "ca-bundle.pem.tmp")
            << name;
    }
}

}  // namespace
}  // namespace vaultgate::test
