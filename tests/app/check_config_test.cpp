// `vaultgate check-config` as a pre-flight, run as the real binary: files,
// modes, the CA pair, listeners and env credentials, each finding with the
// place of its key; and `serve` refusing the same mistakes the same way.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <sstream>

namespace vaultgate::test {
namespace {

class CheckConfigTest : public ::testing::Test {
protected:
    CheckConfigTest() : pki_(dir_), yaml_(serve_config(dir_, pki_, 443, 443)) {}

    // Replaces the one `from` in the config by `to`.
    void replace(const std::string& from, const std::string& to) {
        const auto at = yaml_.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        ASSERT_EQ(yaml_.find(from, at + 1), std::string::npos) << from;
        yaml_.replace(at, from.size(), to);
    }

    // "CONFIG:LINE:COL" of the one `text` in the config.
    std::string place(const std::string& text) const {
        const auto at = yaml_.find(text);
        EXPECT_NE(at, std::string::npos) << text;
        const auto line = std::count(yaml_.begin(), yaml_.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1;
        const auto line_start = yaml_.rfind('\n', at);
        const auto column = line_start == std::string::npos ? at + 1 : at - line_start;
        return config_path() + ":" + std::to_string(line) + ":" + std::to_string(column);
    }

    std::string config_path() const { return dir_.file("vaultgate.yaml"); }

    CommandResult check(const std::vector<std::string>& extra = {},
                        const std::map<std::string, std::string>& env = {}) {
        dir_.write("vaultgate.yaml", yaml_);
        std::vector<std::string> argv{VAULTGATE_BINARY, "check-config", "--config", config_path()};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return run_command(argv, "", env);
    }

    TempDir dir_;
    TestPki pki_;
    std::string yaml_;
};

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

TEST_F(CheckConfigTest, AValidConfigPassesSilently) {
    const auto r = check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out + r.err, "");
}

TEST_F(CheckConfigTest, AMissingUpstreamCaFileIsReportedAtItsKey) {
    const auto missing = dir_.file("no-such-ca.pem");
    replace(pki_.upstream_ca_cert, missing);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "vaultgate: " + place(missing) + ": upstream.ca_file: cannot read " + missing +
                         ": No such file or directory\n");
    EXPECT_EQ(r.out, "");
}

TEST_F(CheckConfigTest, ASnapshotPathInAMissingDirectoryIsReportedAtItsKey) {
    const auto snapshot = dir_.file("no-state-dir/snapshot.db");
    replace("  path: " + dir_.file("vaultgate.db"),
            "  url: postgresql://vaultgate@127.0.0.1:1/vaultgate\n  snapshot_path: " + snapshot);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(place(snapshot) + ": store.snapshot_path: directory " + dir_.file("no-state-dir")),
              std::string::npos)
        << r.err;
}

TEST_F(CheckConfigTest, AMissingAdminTokenFileIsReportedAtItsKey) {
    const auto missing = dir_.file("no-such.token");
    replace(dir_.file("admin.token"), missing);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "vaultgate: " + place(missing) + ": admin.token_file: cannot read " + missing +
                         ": No such file or directory\n");
}

TEST_F(CheckConfigTest, AnAdminTokenFileOthersCanReadIsRefused) {
    const auto token = dir_.file("admin.token");
    const auto r0 = check();  // writes the token file
    ASSERT_EQ(r0.exit_code, 0) << r0.err;
    ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "vaultgate: " + place(token) + ": admin.token_file: " + token +
                         " is open to group or others (mode 0644); it must be readable by its owner only: "
                         "chmod 600 " +
                         token + "\n");
}

TEST_F(CheckConfigTest, AnAdminTokenFileWithoutAUsableTokenIsRefused) {
    const auto token = dir_.write("short.token", "short\n");
    replace(dir_.file("admin.token"), token);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err.rfind("vaultgate: " + place(token) + ": admin.token_file: admin.token_file " + token, 0), 0u)
        << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
}

TEST_F(CheckConfigTest, ACaKeyThatDoesNotMatchTheCertificateIsRefused) {
    // Another CA's key, private as it should be: only the pairing is wrong.
    const auto other_key = dir_.file("upstream-ca/ca-key.pem");
    replace(pki_.proxy_ca_key, other_key);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err.rfind("vaultgate: " + place(other_key) + ": ca.key: " + other_key +
                              ": key does not match the certificate in " + pki_.proxy_ca_cert,
                          0),
              0u)
        << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
}

TEST_F(CheckConfigTest, ACaKeyOthersCanReadIsRefused) {
    ASSERT_EQ(::chmod(pki_.proxy_ca_key.c_str(), 0640), 0);
    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(place(pki_.proxy_ca_key) + ": ca.key: " + pki_.proxy_ca_key +
                         " is open to group or others (mode 0640)"),
              std::string::npos)
        << r.err;
}

// systemd's LoadCredential= files are mode 0440 in $CREDENTIALS_DIRECTORY:
// group read is accepted there, and only there.
TEST_F(CheckConfigTest, GroupReadIsAcceptedForASystemdCredentialOnly) {
    ASSERT_EQ(::mkdir(dir_.file("credentials").c_str(), 0500), 0);
    const auto key = dir_.file("credentials/master-key");
    ASSERT_EQ(::rename(dir_.file("master.key").c_str(), key.c_str()), 0);
    replace(dir_.file("master.key"), key);
    const std::map<std::string, std::string> systemd{{"CREDENTIALS_DIRECTORY", dir_.file("credentials")}};

    ASSERT_EQ(::chmod(key.c_str(), 0440), 0);
    auto r = check({}, systemd);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out + r.err, "");

    r = check();  // the same file outside a service's credentials
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(key + " is open to group or others (mode 0440)"), std::string::npos) << r.err;

    ASSERT_EQ(::chmod(key.c_str(), 0444), 0);
    r = check({}, systemd);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(key + " is open to group or others (mode 0444)"), std::string::npos) << r.err;
}

TEST_F(CheckConfigTest, AListenerPortInUseIsRefusedUnlessTheBindCheckIsSkipped) {
    asio::io_context ioc;
    tcp::acceptor busy(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto address = "127.0.0.1:" + std::to_string(busy.local_endpoint().port());
    replace("proxy: 127.0.0.1:0", "proxy: " + address);
    auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "vaultgate: " + place(address) + ": listen.proxy: cannot bind " + address + ": Address already in use\n");

    r = check({"--no-bind-check"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out + r.err, "");
}

TEST_F(CheckConfigTest, AnUnsetEnvCredentialIsAWarningOnly) {
    const std::string var = "VAULTGATE_TEST_PREFLIGHT_UNSET";
    replace("BENCH_KEY: { file: ", "OTHER_KEY: { env: " + var + " }\n      BENCH_KEY: { file: ");
    auto r = check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "vaultgate: " + place(var) +
                         ": vaults[0].credentials.OTHER_KEY.env: warning: environment variable " + var +
                         " is not set or empty: credential OTHER_KEY of vault bench will be unset, and requests "
                         "that need it get 503 credential_missing\n");

    r = check({}, {{var, "sk-set-in-the-environment"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out + r.err, "");
}

TEST_F(CheckConfigTest, EveryFindingIsReportedInTheOrderOfTheFile) {
    const auto var = std::string("VAULTGATE_TEST_PREFLIGHT_UNSET");
    const auto socket = dir_.file("no-run-dir/admin.sock");
    replace("admin: 127.0.0.1:0", "admin: unix:" + socket);
    replace(pki_.proxy_ca_key, dir_.file("upstream-ca/ca-key.pem"));
    replace(pki_.upstream_ca_cert, dir_.file("no-such-ca.pem"));
    replace(dir_.file("vaultgate.db"), dir_.file("no-store-dir/vaultgate.db"));
    replace(dir_.file("access.log"), dir_.file("no-log-dir/access.log"));
    replace(dir_.file("secret.txt"), dir_.file("no-such-secret.txt"));
    replace("BENCH_KEY: { file: ", "OTHER_KEY: { env: " + var + " }\n      BENCH_KEY: { file: ");
    dir_.write("vaultgate.yaml", yaml_);
    ASSERT_EQ(::chmod(dir_.file("master.key").c_str(), 0604), 0);

    const auto r = check();
    EXPECT_EQ(r.exit_code, 2);
    const std::vector<std::string> expected{
        place("unix:" + socket) + ": listen.admin: directory " + dir_.file("no-run-dir") + ": No such file",
        place(dir_.file("upstream-ca/ca-key.pem")) + ": ca.key: ",
        place(dir_.file("no-such-ca.pem")) + ": upstream.ca_file: cannot read",
        place(dir_.file("no-store-dir/vaultgate.db")) + ": store.path: directory " + dir_.file("no-store-dir"),
        place(dir_.file("master.key")) + ": store.master_key_file: " + dir_.file("master.key") +
            " is open to group or others (mode 0604)",
        place(dir_.file("no-log-dir/access.log")) + ": log.access: directory " + dir_.file("no-log-dir"),
        place(var) + ": vaults[0].credentials.OTHER_KEY.env: warning: ",
        place(dir_.file("no-such-secret.txt")) + ": vaults[0].credentials.BENCH_KEY.file: cannot read",
    };
    const auto lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), expected.size()) << r.err;
    for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(lines[i].rfind("vaultgate: " + expected[i], 0), 0u) << "line " << i << ": " << lines[i];
}

TEST_F(CheckConfigTest, ACaServeWouldCreateIsNoFinding) {
    replace(pki_.proxy_ca_cert, dir_.file("new-ca/ca.pem"));
    replace(pki_.proxy_ca_key, dir_.file("new-ca/ca-key.pem"));
    auto r = check();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out + r.err, "");
    // Other names are not created: the missing files are named.
    replace(dir_.file("new-ca/ca.pem"), dir_.file("new-ca/proxy.pem"));
    r = check();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(": ca.cert: cannot read " + dir_.file("new-ca/proxy.pem") +
                         ": No such file or directory; create a CA with `vaultgate ca init`"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(": ca.key: cannot read " + dir_.file("new-ca/ca-key.pem")), std::string::npos) << r.err;
}

TEST_F(CheckConfigTest, ServeReportsTheSameFindingsWithTheirPlaces) {
    const auto missing_ca = dir_.file("no-such-ca.pem");
    const auto missing_token = dir_.file("no-such.token");
    replace(pki_.upstream_ca_cert, missing_ca);
    replace(dir_.file("admin.token"), missing_token);
    dir_.write("vaultgate.yaml", yaml_);
    ServeProcess serve(config_path());
    EXPECT_FALSE(serve.started());
    EXPECT_EQ(serve.wait_exit(), 2);
    const auto err = serve.stderr_text();
    EXPECT_NE(err.find("vaultgate: " + place(missing_ca) + ": upstream.ca_file: cannot read " + missing_ca +
                       ": No such file or directory\n"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("vaultgate: " + place(missing_token) + ": admin.token_file: cannot read " + missing_token),
              std::string::npos)
        << err;
}

TEST_F(CheckConfigTest, ASigv4HostWithoutRegionOrServiceIsRefused) {
    replace("auth: { type: api-key, key: BENCH_KEY }",
            "auth: { type: aws-sigv4, access_key_id: BENCH_KEY, secret_access_key: BENCH_KEY }");
    auto r = check({"--no-bind-check"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(place("{ type: aws-sigv4") + ": vaults[0].services[0].auth: aws-sigv4: "), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("set region and service"), std::string::npos) << r.err;

    // With both given, the host needs no AWS form.
    replace("secret_access_key: BENCH_KEY }", "secret_access_key: BENCH_KEY, region: us-east-1, service: s3 }");
    r = check({"--no-bind-check"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CheckConfigTest, AGithubAppKeyThatIsNoRsaKeyIsRefused) {
    replace("auth: { type: api-key, key: BENCH_KEY }",
            "auth: { type: github-app, app_id: \"1\", installation_id: \"2\", private_key: BENCH_KEY }");
    auto r = check({"--no-bind-check"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(": vaults[0].services[0].auth: credential BENCH_KEY cannot sign tokens: "), std::string::npos)
        << r.err;

    // The same for a service-account key that is not one.
    replace("auth: { type: github-app, app_id: \"1\", installation_id: \"2\", private_key: BENCH_KEY }",
            "auth: { type: jwt-bearer, key: BENCH_KEY, scopes: [s] }");
    r = check({"--no-bind-check"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(": vaults[0].services[0].auth: credential BENCH_KEY cannot sign tokens: "), std::string::npos)
        << r.err;
}

}  // namespace
}  // namespace vaultgate::test
