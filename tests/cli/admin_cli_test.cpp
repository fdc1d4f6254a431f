// The admin commands on the real binary against a real `vaultgate serve`:
// connection settings from --config, tables and -o json, `logs` and its
// --follow, and a credential typed at a terminal (a pseudo-terminal here).
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace vaultgate::test {
namespace {

using nlohmann::json;

constexpr const char* typed_secret = "sk-typed-at-the-terminal-4242";

// A child whose stdout (and stderr) is read as it comes; with `tty`, all
// three of its standard streams are a new pseudo-terminal instead.
class LiveProcess {
public:
    LiveProcess(const std::vector<std::string>& argv, bool tty) {
        int slave = -1;
        int out[2] = {-1, -1};
        if (tty) {
            master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
            EXPECT_GE(master_, 0);
            ::grantpt(master_);
            ::unlockpt(master_);
            slave_path_ = ::ptsname(master_);
        } else {
            EXPECT_EQ(::pipe(out), 0);
        }
        pid_ = ::fork();
        if (pid_ == 0) {
            if (tty) {
                ::setsid();
                slave = ::open(slave_path_.c_str(), O_RDWR);  // becomes the controlling terminal
                ::dup2(slave, 0);
                ::dup2(slave, 1);
                ::dup2(slave, 2);
            } else {
                int null = ::open("/dev/null", O_RDONLY);
                ::dup2(null, 0);
                ::dup2(out[1], 1);
                ::dup2(out[1], 2);
            }
            std::vector<char*> args;
            for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            ::execv(args[0], args.data());
            ::_exit(127);
        }
        if (!tty) {
            ::close(out[1]);
            master_ = out[0];
        }
    }
    ~LiveProcess() {
        if (pid_ > 0 && exit_code_ < 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (master_ >= 0) ::close(master_);
    }
    // Reads until `needle` has been seen (true) or timeout_ms pass (false).
    bool read_until(const std::string& needle, int timeout_ms = 10000) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (text_.find(needle) == std::string::npos) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd p{master_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
            char buf[4096];
            const ssize_t n = ::read(master_, buf, sizeof buf);
            if (n <= 0) return text_.find(needle) != std::string::npos;
            text_.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    void write(const std::string& bytes) {
        EXPECT_EQ(::write(master_, bytes.data(), bytes.size()), ssize_t(bytes.size()));
    }
    void signal(int sig) { ::kill(pid_, sig); }
    // The exit code, or 128 + the signal that ended it.
    int wait() {
        int status = 0;
        ::waitpid(pid_, &status, 0);
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
    }
    const std::string& text() const { return text_; }
    const std::string& slave_path() const { return slave_path_; }

private:
    pid_t pid_ = -1;
    int master_ = -1;
    int exit_code_ = -1;
    std::string slave_path_;
    std::string text_;
};

class AdminCliTest : public ::testing::Test {
protected:
    AdminCliTest() : pki_(dir_) {
        auto yaml = serve_config(dir_, pki_, 443, 443);
        admin_port_ = free_port();
        yaml.replace(yaml.find("admin: 127.0.0.1:0"), 18, "admin: 127.0.0.1:" + std::to_string(admin_port_));
        config_ = dir_.write("vaultgate.yaml", yaml);
        proc_ = std::make_unique<ServeProcess>(config_);
        proc_->forbid_in_stderr(typed_secret);
    }
    ~AdminCliTest() override {
        if (proc_ && proc_->started()) {
            proc_->signal(SIGTERM);
            proc_->wait_exit();
        }
    }

    // The command with the connection taken from the server's config file.
    std::vector<std::string> argv(std::vector<std::string> args) const {
        args.insert(args.begin(), VAULTGATE_BINARY);
        args.insert(args.end(), {"--config", config_});
        return args;
    }
    CommandResult cli(const std::vector<std::string>& args, const std::string& input = "") {
        return run_command(argv(args), input, {{"VAULTGATE_ADMIN", ""}, {"VAULTGATE_ADMIN_TOKEN_FILE", ""}});
    }

    // A CONNECT naming a session that does not exist: a 407 that the access
    // log records (without the header the config's default session applies).
    void unauthenticated_connect(const std::string& host) {
        RawClient c(proc_->proxy_port());
        // base64("ses_nosuch:not-a-token")
        auto head = c.connect(host + ":443", "Proxy-Authorization: Basic c2VzX25vc3VjaDpub3QtYS10b2tlbg==\r\n");
        EXPECT_EQ(head.rfind("HTTP/1.1 407", 0), 0u) << head;
    }

    TempDir dir_;
    TestPki pki_;
    std::uint16_t admin_port_ = 0;
    std::string config_;
    std::unique_ptr<ServeProcess> proc_;
};

TEST_F(AdminCliTest, ConfigGivesTheAddressAndTokenAndOptionsWin) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto listed = cli({"vault", "list"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_EQ(listed.out.rfind("ID", 0), 0u) << listed.out;
    EXPECT_NE(listed.out.find("bench"), std::string::npos) << listed.out;
    // An explicit --token-file wins over the config's.
    dir_.write("wrong.token", "wrong-token-0123456789abcdef\n");
    auto wrong = cli({"vault", "list", "--token-file", dir_.file("wrong.token")});
    EXPECT_EQ(wrong.exit_code, 1) << wrong.err;
    // So does the environment.
    auto env = run_command(argv({"vault", "list"}), "", {{"VAULTGATE_ADMIN", "http://127.0.0.1:1"}});
    EXPECT_EQ(env.exit_code, 1);
    EXPECT_NE(env.err.find("127.0.0.1:1"), std::string::npos) << env.err;
    // A config that is not valid is a usage error naming it.
    auto bad = run_command({VAULTGATE_BINARY, "vault", "list", "--config", dir_.write("bad.yaml", "listen: [\n")});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("bad.yaml"), std::string::npos) << bad.err;
}

TEST_F(AdminCliTest, SessionsAreListedShownAndAVaultIsDeletedOnlyOnceUnused) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    ASSERT_EQ(cli({"vault", "create", "github"}).exit_code, 0);
    auto created = cli({"session", "create", "--vault", "github", "--ttl", "600", "--json"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    const auto session = json::parse(created.out);
    const std::string id = session["id"];
    const std::string token = session["token"];

    auto listed = cli({"session", "list"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_EQ(listed.out.rfind("ID", 0), 0u) << listed.out;
    ASSERT_NE(listed.out.find(id), std::string::npos) << listed.out;
    const std::string row =
        listed.out.substr(listed.out.find(id)).substr(0, listed.out.substr(listed.out.find(id)).find('\n'));
    EXPECT_NE(row.find(" github "), std::string::npos) << "the vault by name: " << row;
    EXPECT_EQ(listed.out.find(token), std::string::npos) << "a listing never shows a token";
    auto shown = cli({"session", "show", id, "-o", "json"});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(json::parse(shown.out)["id"], id);
    EXPECT_EQ(shown.out.find(token), std::string::npos);

    auto in_use = cli({"vault", "delete", "github"});
    EXPECT_EQ(in_use.exit_code, 1);
    EXPECT_NE(in_use.err.find("vault_in_use"), std::string::npos) << in_use.err;
    EXPECT_EQ(cli({"vault", "show", "github"}).exit_code, 0) << "refused: the vault stays";

    EXPECT_EQ(cli({"session", "delete", id}).exit_code, 0);
    EXPECT_EQ(cli({"session", "show", id}).exit_code, 1);
    auto deleted = cli({"vault", "delete", "github"});
    EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
    auto gone = cli({"vault", "show", "github"});
    EXPECT_EQ(gone.exit_code, 1);
    EXPECT_NE(gone.err.find("unknown_vault"), std::string::npos) << gone.err;
    EXPECT_EQ(gone.out, "");
}

TEST_F(AdminCliTest, AddServiceTakesTheSignedAndMintedShapes) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    ASSERT_EQ(cli({"vault", "create", "aws"}).exit_code, 0);
    for (const char* name : {"AK", "SK"}) ASSERT_EQ(cli({"vault", "add-credential", "aws", name}, "v-123\n").exit_code, 0);
    auto added = cli({"vault", "add-service", "aws", "--host", "*.amazonaws.com", "--auth", "aws-sigv4",
                      "--access-key-id", "AK", "--secret-access-key", "SK", "--region", "eu-west-1", "--json"});
    ASSERT_EQ(added.exit_code, 0) << added.err;
    EXPECT_EQ(json::parse(added.out)["auth_config"],
              (json{{"type", "aws-sigv4"}, {"access_key_id", "AK"}, {"secret_access_key", "SK"}, {"region", "eu-west-1"}}));

    ASSERT_EQ(cli({"vault", "add-credential", "aws", "SA"}, "{}\n").exit_code, 0);
    auto scoped = cli({"vault", "add-service", "aws", "--host", "storage.googleapis.com", "--auth", "jwt-bearer",
                       "--key", "SA", "--scopes", "a,b", "--json"});
    ASSERT_EQ(scoped.exit_code, 0) << scoped.err;
    EXPECT_EQ(json::parse(scoped.out)["auth_config"]["scopes"], (json{"a", "b"}));

    // The server names what the type still needs.
    auto missing = cli({"vault", "add-service", "aws", "--host", "sts.amazonaws.com", "--auth", "aws-sigv4",
                        "--access-key-id", "AK"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("missing required key 'secret_access_key'"), std::string::npos) << missing.err;
}

TEST_F(AdminCliTest, OutputJsonAndTheJsonAliasPrintTheServersAnswer) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    for (const auto& flags : std::vector<std::vector<std::string>>{{"-o", "json"}, {"--output=json"}, {"--json"}}) {
        std::vector<std::string> args = {"vault", "show", "bench"};
        args.insert(args.end(), flags.begin(), flags.end());
        auto r = cli(args);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(json::parse(r.out)["name"], "bench") << r.out;
    }
    auto table = cli({"vault", "show", "bench", "-o", "table"});
    EXPECT_EQ(table.exit_code, 0);
    EXPECT_NE(table.out.find("CREDENTIAL"), std::string::npos) << table.out;
    // An unknown vault is an error with the API's code, never empty output.
    auto unknown = cli({"vault", "show", "no-such-vault"});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_NE(unknown.err.find("vault"), std::string::npos) << unknown.err;
    EXPECT_EQ(unknown.out, "");
}

TEST_F(AdminCliTest, LogsPrintsAHeaderAndTheReasonAndVaultColumns) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    unauthenticated_connect("api.bound.test");
    CommandResult logs;
    ASSERT_TRUE(eventually([&] {
        logs = cli({"logs"});
        return logs.out.find("api.bound.test") != std::string::npos;
    })) << logs.out
        << logs.err;
    EXPECT_EQ(logs.exit_code, 0);
    const std::string header = logs.out.substr(0, logs.out.find('\n'));
    for (const char* column : {"TIME", "SESSION", "VAULT", "METHOD", "TARGET", "STATUS", "REASON"})
        EXPECT_NE(header.find(column), std::string::npos) << header;
    EXPECT_NE(logs.out.find("407"), std::string::npos) << logs.out;
}

TEST_F(AdminCliTest, LogsFollowPrintsARequestMadeAfterItStarted) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    LiveProcess follow(argv({"logs", "--follow"}), false);
    // The header comes after the first poll answered: from then on it is following.
    ASSERT_TRUE(follow.read_until("REASON")) << follow.text();
    EXPECT_EQ(follow.text().find("new.test"), std::string::npos);
    unauthenticated_connect("new.test");
    EXPECT_TRUE(follow.read_until("new.test:443")) << follow.text();
    follow.signal(SIGINT);
    EXPECT_EQ(follow.wait(), 0);
}

TEST_F(AdminCliTest, ACredentialTypedAtATerminalIsNotEchoed) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    auto created = cli({"vault", "create", "typed", "--json"});
    ASSERT_EQ(created.exit_code, 0) << created.err;

    LiveProcess typing(argv({"vault", "add-credential", "typed", "KEY"}), true);
    ASSERT_TRUE(typing.read_until("(not shown)")) << typing.text();
    typing.write(std::string(typed_secret) + "\n");
    typing.read_until("CREDENTIAL");
    EXPECT_EQ(typing.wait(), 0) << typing.text();
    EXPECT_EQ(typing.text().find(typed_secret), std::string::npos) << typing.text();
    auto shown = cli({"vault", "show", "typed"});
    EXPECT_NE(shown.out.find("KEY"), std::string::npos) << shown.out << shown.err;
}

TEST_F(AdminCliTest, TheTerminalGetsItsEchoBackWhenASignalEndsThePrompt) {
    ASSERT_TRUE(proc_->started()) << proc_->stderr_text();
    LiveProcess typing(argv({"vault", "rotate", "bench", "BENCH_KEY"}), true);
    ASSERT_TRUE(typing.read_until("(not shown)")) << typing.text();
    // The terminal stays open in the test after the child is gone.
    const int tty = ::open(typing.slave_path().c_str(), O_RDWR | O_NOCTTY);
    ASSERT_GE(tty, 0);
    termios during{};
    ASSERT_EQ(::tcgetattr(tty, &during), 0);
    EXPECT_EQ(during.c_lflag & ECHO, 0u);
    typing.signal(SIGTERM);
    EXPECT_EQ(typing.wait(), 128 + SIGTERM);
    termios after{};
    ASSERT_EQ(::tcgetattr(tty, &after), 0);
    EXPECT_NE(after.c_lflag & ECHO, 0u);
    ::close(tty);
}

}  // namespace
}  // namespace vaultgate::test
