// The command line itself, on the real binary: every command and subcommand
// has a --help that exits 0 and does nothing else, an unknown option is exit 2
// with a hint, and the bash completion is read from the same command tree.
#include "serve_process.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace vaultgate::test {
namespace {

namespace fs = std::filesystem;

// Every command path the binary knows (the completion test checks that the
// binary knows no other).
const std::vector<std::vector<std::string>> all_commands = {
    {"serve"},
    {"check-config"},
    {"ca"},
    {"ca", "init"},
    {"vault"},
    {"vault", "create"},
    {"vault", "list"},
    {"vault", "show"},
    {"vault", "delete"},
    {"vault", "add-credential"},
    {"vault", "rotate"},
    {"vault", "remove-credential"},
    {"vault", "add-service"},
    {"vault", "remove-service"},
    {"session"},
    {"session", "create"},
    {"session", "list"},
    {"session", "show"},
    {"session", "delete"},
    {"logs"},
    {"completion"},
    {"completion", "bash"},
    {"version"},
    {"help"},
};

// Commands that reach out: pointed at a port where nothing listens, so that
// a command that ran instead of printing its help would fail.
const std::vector<std::string> unreachable_admin = {"--admin", "http://127.0.0.1:1"};

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

CommandResult vaultgate(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), VAULTGATE_BINARY);
    return run_command(args, input, {{"VAULTGATE_ADMIN", ""}, {"VAULTGATE_ADMIN_TOKEN_FILE", ""}}, 30);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(CliHelp, EveryCommandPrintsItsUsageAndExitsZero) {
    for (const auto& command : all_commands) {
        std::vector<std::string> args = command;
        args.push_back("--help");
        auto r = vaultgate(args);
        EXPECT_EQ(r.exit_code, 0) << joined(command) << "\n" << r.err;
        EXPECT_NE(r.out.find("Usage:"), std::string::npos) << joined(command) << "\n" << r.out;
        EXPECT_NE(r.out.find(command.back()), std::string::npos) << joined(command) << "\n" << r.out;
        EXPECT_EQ(r.err, "") << joined(command);
    }
}

TEST(CliHelp, HelpHasNoSideEffects) {
    TempDir dir;
    // ca init would write the CA here.
    auto ca = vaultgate({"ca", "init", "--out", dir.file("ca"), "--help"});
    EXPECT_EQ(ca.exit_code, 0) << ca.err;
    EXPECT_FALSE(fs::exists(dir.file("ca")));
    // serve would start (or fail on the missing config); it prints the help.
    auto serve = vaultgate({"serve", "--config", dir.file("missing.yaml"), "--help"});
    EXPECT_EQ(serve.exit_code, 0) << serve.err;
    EXPECT_NE(serve.out.find("--config"), std::string::npos) << serve.out;
    // An admin command would send a request and fail: nothing listens there.
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"vault", "create", "v"}, {"vault", "delete", "v"}, {"session", "list"}, {"logs", "--follow"}}) {
        std::vector<std::string> args = command;
        args.insert(args.end(), unreachable_admin.begin(), unreachable_admin.end());
        args.push_back("--help");
        auto r = vaultgate(args);
        EXPECT_EQ(r.exit_code, 0) << joined(command) << "\n" << r.err;
        EXPECT_EQ(r.err, "") << joined(command);
    }
    // The credential value would be read from stdin and sent.
    auto add =
        vaultgate({"vault", "add-credential", "v", "KEY", "--admin", "http://127.0.0.1:1", "--help"}, "secret\n");
    EXPECT_EQ(add.exit_code, 0) << add.err;
    EXPECT_EQ(add.out.find("secret"), std::string::npos);
}

TEST(CliHelp, UnknownOptionIsExitTwoWithAHintForEveryCommand) {
    for (const auto& command : all_commands) {
        std::vector<std::string> args = command;
        args.push_back("--frobnicate");
        auto r = vaultgate(args);
        EXPECT_EQ(r.exit_code, 2) << joined(command) << "\n" << r.err;
        EXPECT_NE(r.err.find("unknown option '--frobnicate'"), std::string::npos) << joined(command) << "\n" << r.err;
        EXPECT_NE(r.err.find("--help"), std::string::npos) << joined(command) << "\n" << r.err;
        EXPECT_EQ(r.out, "") << joined(command);
    }
    // A typo gets the closest option.
    auto typo = vaultgate({"session", "list", "--outptu", "json"});
    EXPECT_EQ(typo.exit_code, 2);
    EXPECT_NE(typo.err.find("did you mean '--output'?"), std::string::npos) << typo.err;
    auto sub = vaultgate({"vault", "delet", "v"});
    EXPECT_EQ(sub.exit_code, 2);
    EXPECT_NE(sub.err.find("did you mean 'delete'?"), std::string::npos) << sub.err;
}

TEST(CliHelp, ArgumentsAreCheckedBeforeAnyRequest) {
    // Nothing listens on the admin port given, so any request would be exit 1.
    const std::vector<std::vector<std::string>> bad = {
        {"session", "create", "--vault", "v", "--ttl", "86401"},
        {"session", "create", "--vault", "v", "--ttl", "0"},
        {"session", "create", "--vault", "v", "--policy", "p", "--allow-domain", "d.test"},
        {"session", "create"},
        {"vault", "add-service", "v", "--host", "h.test", "--auth", "magic", "--key", "K"},
        {"vault", "add-service", "v", "--host", "h.test", "--auth", "bearer", "--key", "K", "--port", "70000"},
        {"vault", "show"},
        {"vault", "list", "--output", "yaml"},
        {"logs", "--limit", "0"},
        {"vault", "add-credential", "v", "KEY", "--value", "sk-on-the-command-line"},
    };
    for (const auto& command : bad) {
        std::vector<std::string> args = command;
        args.insert(args.end(), unreachable_admin.begin(), unreachable_admin.end());
        auto r = vaultgate(args, "value\n");
        EXPECT_EQ(r.exit_code, 2) << joined(command) << "\n" << r.err;
        EXPECT_EQ(r.err.find("127.0.0.1:1"), std::string::npos) << joined(command) << "\n" << r.err;
        EXPECT_EQ(r.err.find("sk-on-the-command-line"), std::string::npos) << r.err;
    }
}

TEST(CliCompletion, CommittedBashScriptIsTheGeneratedOne) {
    auto r = vaultgate({"completion", "bash"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_file(std::string(VAULTGATE_SOURCE_DIR) + "/docs/completions/vaultgate.bash"), r.out)
        << "run: vaultgate completion bash > docs/completions/vaultgate.bash";
}

// Sources the script in bash and asks it what it completes `words` to.
std::string complete(const std::string& script_path, const std::vector<std::string>& words) {
    std::string array;
    for (const auto& w : words) array += " '" + w + "'";
    const std::string program = "source '" + script_path + "'; COMP_WORDS=(" + array +
                                "); COMP_CWORD=" + std::to_string(words.size() - 1) +
                                "; _vaultgate; printf '%s\\n' \"${COMPREPLY[@]}\"";
    auto r = run_command({"bash", "--norc", "--noprofile", "-c", program});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
}

TEST(CliCompletion, BashCompletesCommandsSubcommandsAndOptions) {
    const std::string script = std::string(VAULTGATE_SOURCE_DIR) + "/docs/completions/vaultgate.bash";
    EXPECT_EQ(complete(script, {"vaultgate", "va"}), "vault\n");
    const std::string vault_words = complete(script, {"vaultgate", "vault", ""});
    for (const char* word : {"create", "list", "show", "delete", "add-credential", "rotate", "remove-credential",
                             "add-service", "remove-service", "--help"})
        EXPECT_NE(vault_words.find(std::string(word) + "\n"), std::string::npos) << word << "\n" << vault_words;
    EXPECT_EQ(vault_words.find("--token-file"), std::string::npos) << vault_words;
    // Options of the leaf, also after other options and their values.
    const std::string leaf = complete(script, {"vaultgate", "session", "list", "--admin", "unix:/x", "--"});
    for (const char* word : {"--admin", "--token-file", "--config", "--output", "--json", "--help"})
        EXPECT_NE(leaf.find(std::string(word) + "\n"), std::string::npos) << word << "\n" << leaf;
    EXPECT_EQ(complete(script, {"vaultgate", "session", "list", "--out"}), "--output\n");
    // The hidden --value is never offered.
    EXPECT_EQ(complete(script, {"vaultgate", "vault", "add-credential", "--val"}), "--value-file\n");
}

}  // namespace
}  // namespace vaultgate::test
