#include "vaultgate/credentials/bootstrap_env.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace vaultgate {
namespace {

EnvList parse_ok(const std::string& text) {
    std::string error;
    auto vars = parse_env_object(text, &error);
    EXPECT_TRUE(vars.has_value()) << error;
    return vars.value_or(EnvList{});
}

std::vector<std::string> names_of(const EnvList& vars) {
    std::vector<std::string> names;
    for (const auto& v : vars) names.push_back(v.name);
    return names;
}

TEST(BootstrapEnv, EnvNames) {
    struct Case {
        std::string name;
        bool ok;
    };
    const std::vector<Case> cases = {
        {"A", true},         {"_", true},           {"a_b_1", true},  {"COMPOSIO_API_KEY", true},
        {"", false},         {"1A", false},         {"A-B", false},   {"A B", false},
        {"A=B", false},      {"A;rm -rf /", false}, {"$(id)", false}, {"A\nB", false},
        {"\xc3\xa9", false},
    };
    for (const auto& c : cases) EXPECT_EQ(is_env_name(c.name), c.ok) << c.name;
}

TEST(BootstrapEnv, SecretSuffixes) {
    struct Case {
        std::string name;
        bool secret;
    };
    const std::vector<Case> cases = {
        {"COMPOSIO_API_KEY", true},
        {"GITHUB_TOKEN", true},
        {"CLIENT_SECRET", true},
        {"BACKEND_URL", false},
        {"COMPOSIO_TOOLROUTER_SESSION_ID", false},
        {"API_KEY", false},  // the suffix needs a prefix: "_API_KEY"
        {"_TOKEN", false},
        {"X_TOKENS", false},
        {"SSH_KEY", false},
        {"composio_api_key", false},  // case matters, as it does for environment names
        {"TOKEN", false},
    };
    for (const auto& c : cases) EXPECT_EQ(has_secret_suffix(c.name), c.secret) << c.name;
}

TEST(BootstrapEnv, ParsesObjectsInOrder) {
    EnvList vars = parse_ok(R"({"Z":"1","A":"2","M":""})");
    EXPECT_EQ(names_of(vars), (std::vector<std::string>{"Z", "A", "M"}));
    EXPECT_EQ(vars[1].value, "2");
    EXPECT_TRUE(parse_ok("{}").empty());
}

TEST(BootstrapEnv, RejectsWhatIsNotAnObjectOfStrings) {
    const std::string secret = "sk-live-DO-NOT-PRINT-42";
    struct Case {
        std::string text;
        std::string message_part;
    };
    const std::vector<Case> cases = {
        {"", "not valid JSON"},
        {"[\"" + secret + "\"]", "got an array"},
        {"\"" + secret + "\"", "got a string"},
        {"null", "got null"},
        {R"({"A_API_KEY":42})", "A_API_KEY is a number"},
        {R"({"A_API_KEY":{"v":")" + secret + "\"}}", "A_API_KEY is an object"},
        {R"({"OK":"x","B":null})", "B is null"},
        {R"({"OK":"x","B":true})", "B is a boolean"},
        {"{\"" + secret + "\":\"x\"}", "key number 1 is not"},
        {R"({"A":"x","b c":"y"})", "key number 2 is not"},
        // Cut off in the middle of the secret: the parser's own message would quote it.
        {"{\"A_API_KEY\":\"" + secret, "line 1, column"},
        {"{\"A\":\"x\",\n\"B_TOKEN\": " + secret + "}", "line 2, column"},
        {"{\"A\":\"\xff\"}", "not valid JSON"},
    };
    for (const auto& c : cases) {
        std::string error;
        EXPECT_FALSE(parse_env_object(c.text, &error).has_value()) << c.text;
        EXPECT_NE(error.find(c.message_part), std::string::npos) << error;
        EXPECT_EQ(error.rfind("stdin: ", 0), 0u) << error;
        EXPECT_EQ(error.find(secret), std::string::npos) << error;
        EXPECT_EQ(error.find("sk-live"), std::string::npos) << error;
    }
}

TEST(BootstrapEnv, ChoosesSecrets) {
    EnvList vars = parse_ok(R"({"BACKEND_URL":"https://b.example","A_API_KEY":"k1","B_TOKEN":"t",
                               "EMPTY_SECRET":"","C_SECRET":"s","PLAIN":"p"})");
    struct Case {
        std::vector<std::string> named;
        std::optional<std::vector<std::string>> chosen;
        std::string error_part;
    };
    const std::vector<Case> cases = {
        {{}, std::vector<std::string>{"A_API_KEY", "B_TOKEN", "C_SECRET"}, ""},
        // Named ones replace the suffix rule entirely.
        {{"PLAIN"}, std::vector<std::string>{"PLAIN"}, ""},
        {{"PLAIN", "A_API_KEY", "PLAIN"}, std::vector<std::string>{"PLAIN", "A_API_KEY"}, ""},
        {{"MISSING"}, std::nullopt, "--secret MISSING: no such variable"},
        {{"EMPTY_SECRET"}, std::nullopt, "--secret EMPTY_SECRET: the variable is empty"},
    };
    for (const auto& c : cases) {
        std::string error;
        auto chosen = choose_secret_names(vars, c.named, &error);
        EXPECT_EQ(chosen, c.chosen);
        if (!c.error_part.empty()) {
            EXPECT_NE(error.find(c.error_part), std::string::npos) << error;
        }
    }
}

TEST(BootstrapEnv, TakesSecretsAndLeavesPlaceholders) {
    EnvList vars = parse_ok(R"({"COMPOSIO_API_KEY":"ak_real_123456","OTHER":"x"})");
    auto secrets = take_secrets(vars, {"COMPOSIO_API_KEY", "NOT_THERE"});
    ASSERT_EQ(secrets.size(), 1u);
    EXPECT_EQ(secrets[0].name, "COMPOSIO_API_KEY");
    EXPECT_EQ(secrets[0].value.reveal(), "ak_real_123456");
    EXPECT_EQ(*find_env(vars, "COMPOSIO_API_KEY"), "vaultgate-placeholder-COMPOSIO_API_KEY");
    EXPECT_EQ(*find_env(vars, "OTHER"), "x");
}

TEST(BootstrapEnv, FindsSecretsNoHeaderCanCarry) {
    struct Case {
        std::string value;
        bool sendable;
    };
    const std::vector<Case> cases = {
        {"sk-abc", true},
        {"with space", true},
        {"\xe2\x82\xac", true},
        {"line\n", false},
        {"a\rb", false},
        {"tab\tx", false},
        {"del\x7f", false},
        {std::string("n\0l", 3), false},
        // The admin API's other limits: its length cap, and JSON's UTF-8.
        {std::string(16 * 1024, 'k'), true},
        {std::string(16 * 1024 + 1, 'k'), false},
        {"\xff\xfe", false},
    };
    for (const auto& c : cases) {
        std::vector<SecretVar> secrets;
        secrets.push_back({"K", Secret(std::string(c.value))});
        const auto bad = unsendable_secrets(secrets);
        EXPECT_EQ(bad.empty(), c.sendable) << c.value.substr(0, 20);
        if (!bad.empty()) {
            EXPECT_EQ(bad[0].name, "K");
            EXPECT_EQ(bad[0].reason.find(c.value), std::string::npos);  // names the problem, not the value
        }
    }
}

TEST(BootstrapEnv, PlaceholdersAreNonEmptyAndCarryOnlyTheName) {
    EXPECT_EQ(placeholder_for("COMPOSIO_API_KEY"), "vaultgate-placeholder-COMPOSIO_API_KEY");
    EXPECT_EQ(placeholder_for("X_TOKEN"), "vaultgate-placeholder-X_TOKEN");
    EXPECT_NE(placeholder_for("A"), placeholder_for("B"));
}

TEST(BootstrapEnv, ScrubsSecretValuesOutOfOtherVariables) {
    EnvList vars = parse_ok(R"({"API_URL":"https://api.example/v1?key=sk-abc123&x=sk-abc123",
                               "X_API_KEY":"sk-abc123","Y":"nothing here"})");
    auto secrets = take_secrets(vars, {"X_API_KEY"});
    auto changed = scrub_other_values(vars, secrets);
    EXPECT_EQ(changed, std::vector<std::string>{"API_URL"});
    EXPECT_EQ(*find_env(vars, "API_URL"),
              "https://api.example/v1?key=vaultgate-placeholder-X_API_KEY&x=vaultgate-placeholder-X_API_KEY");
    EXPECT_EQ(*find_env(vars, "Y"), "nothing here");
}

TEST(BootstrapEnv, ParsesUrlTargets) {
    struct Case {
        std::string value;
        std::optional<std::string> host;
        std::uint16_t port = 0;
        bool tls = true;
    };
    const std::vector<Case> cases = {
        {"https://backend.composio.dev", "backend.composio.dev", 443},
        {"https://backend.composio.dev/", "backend.composio.dev", 443},
        {"https://Backend.Composio.DEV./api/v3?x=1#f", "backend.composio.dev", 443},
        {"HTTPS://api.example.com:8443/v1", "api.example.com", 8443},
        {"http://api.example.com", "api.example.com", 80, false},
        {"http://api.example.com:8080?q", "api.example.com", 8080, false},
        {"https://user:pa%40ss@api.example.com/x", "api.example.com", 443},
        {"https://[2001:db8::1]:9443/", "2001:db8::1", 9443},
        {"https://127.0.0.1:3000", "127.0.0.1", 3000},
        {"https://bücher.example", "xn--bcher-kva.example", 443},
        {"ftp://files.example.com", std::nullopt},
        {"backend.composio.dev", std::nullopt},
        {"https://", std::nullopt},
        {"https:///path", std::nullopt},
        {"https://host:0", std::nullopt},
        {"https://host:99999", std::nullopt},
        {"https://host:0443", std::nullopt},
        {"https://ho st", std::nullopt},
        {"https://host:", std::nullopt},
        {"", std::nullopt},
    };
    for (const auto& c : cases) {
        auto target = parse_url_target(c.value);
        ASSERT_EQ(target.has_value(), c.host.has_value()) << c.value;
        if (!target) continue;
        EXPECT_EQ(target->authority.host, *c.host) << c.value;
        EXPECT_EQ(target->authority.port, c.port) << c.value;
        EXPECT_EQ(target->tls, c.tls) << c.value;
    }
}

TEST(BootstrapEnv, FindsUrlVariablesButNotProxySettings) {
    EnvList vars = parse_ok(R"({"BACKEND_URL":"https://b.example","HTTPS_PROXY":"http://corp:3128",
                               "http_proxy":"http://corp:3128","NAME":"plain","DOCS":"see https://x.example",
                               "API_BASE":"http://a.example:8080"})");
    auto urls = find_url_vars(vars);
    ASSERT_EQ(urls.size(), 2u);
    EXPECT_EQ(urls[0].name, "BACKEND_URL");
    EXPECT_EQ(urls[1].name, "API_BASE");
    EXPECT_EQ(urls[1].target.authority.port, 8080);
}

TEST(BootstrapEnv, MatchesSecretsToUrls) {
    auto url_list = [](std::vector<std::string> names) {
        std::vector<UrlVar> urls;
        for (auto& n : names) urls.push_back({n, *parse_url_target("https://" + n + ".example")});
        return urls;
    };
    struct Case {
        std::string secret;
        std::vector<std::string> urls;
        std::optional<std::size_t> match;
    };
    const std::vector<Case> cases = {
        // One URL variable takes every secret, shared prefix or not: Composio's env.
        {"COMPOSIO_API_KEY", {"BACKEND_URL"}, 0},
        {"COMPOSIO_API_KEY", {}, std::nullopt},
        {"OPENAI_API_KEY", {"ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"}, 1},
        {"ANTHROPIC_API_KEY", {"ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"}, 0},
        // Whole words only: OPENAI and OPENROUTER share letters, not a word.
        {"OPENAI_API_KEY", {"OPENROUTER_URL", "ANTHROPIC_URL"}, std::nullopt},
        // More shared words win.
        {"GITHUB_ENTERPRISE_TOKEN", {"GITHUB_URL", "GITHUB_ENTERPRISE_URL"}, 1},
        // A tie is no answer: the key could go to the wrong host.
        {"GITHUB_TOKEN", {"GITHUB_API_URL", "GITHUB_UPLOAD_URL"}, std::nullopt},
        {"X_TOKEN", {"A_URL", "B_URL"}, std::nullopt},
        {"_X_TOKEN", {"_A_URL", "_B_URL"}, std::nullopt},
    };
    for (const auto& c : cases) EXPECT_EQ(match_url_var(c.secret, url_list(c.urls)), c.match) << c.secret;
}

TEST(BootstrapEnv, SetEnvReplacesInPlace) {
    EnvList vars = parse_ok(R"({"A":"1","HTTPS_PROXY":"http://corp:3128","B":"2"})");
    set_env(vars, "HTTPS_PROXY", "http://s:t@127.0.0.1:3128");
    set_env(vars, "NO_PROXY", "localhost");
    EXPECT_EQ(names_of(vars), (std::vector<std::string>{"A", "HTTPS_PROXY", "B", "NO_PROXY"}));
    EXPECT_EQ(*find_env(vars, "HTTPS_PROXY"), "http://s:t@127.0.0.1:3128");
    EXPECT_EQ(find_env(vars, "MISSING"), nullptr);
}

TEST(BootstrapEnv, ParsesFormats) {
    EXPECT_EQ(parse_env_format("env"), EnvFormat::env);
    EXPECT_EQ(parse_env_format("shell"), EnvFormat::shell);
    EXPECT_EQ(parse_env_format("json"), EnvFormat::json);
    EXPECT_EQ(parse_env_format("JSON"), std::nullopt);
    EXPECT_EQ(parse_env_format(""), std::nullopt);
}

TEST(BootstrapEnv, ShellQuoting) {
    struct Case {
        std::string value;
        std::string quoted;
    };
    const std::vector<Case> cases = {
        {"", "''"},
        {"plain", "'plain'"},
        {"it's", "'it'\\''s'"},
        {"''", "''\\'''\\'''"},
        {"$(rm -rf /) `id` $HOME \\ \"x\"", "'$(rm -rf /) `id` $HOME \\ \"x\"'"},
        {"two\nlines", "'two\nlines'"},
    };
    for (const auto& c : cases) EXPECT_EQ(shell_single_quote(c.value), c.quoted) << c.value;
}

TEST(BootstrapEnv, RendersEachFormat) {
    EnvList vars = {{"A", "x y"}, {"Q", "it's"}, {"E", ""}};
    EXPECT_EQ(render_env(vars, EnvFormat::env), "A=x y\nQ=it's\nE=\n");
    EXPECT_EQ(render_env(vars, EnvFormat::shell), "export A='x y'\nexport Q='it'\\''s'\nexport E=''\n");
    std::string json_text = render_env(vars, EnvFormat::json);
    EXPECT_EQ(json_text, "{\"A\":\"x y\",\"Q\":\"it's\",\"E\":\"\"}\n");
}

TEST(BootstrapEnv, RenderProblems) {
    struct Case {
        EnvList vars;
        EnvFormat format;
        std::optional<std::string> problem_part;
    };
    const std::vector<Case> cases = {
        {{{"A", "one line"}}, EnvFormat::env, std::nullopt},
        {{{"PEM", "a\nb"}}, EnvFormat::env, "PEM: the value has a line break"},
        {{{"PEM", "a\rb"}}, EnvFormat::env, "PEM: the value has a line break"},
        {{{"PEM", "a\nb"}}, EnvFormat::shell, std::nullopt},
        {{{"PEM", "a\nb"}}, EnvFormat::json, std::nullopt},
        {{{"Z", std::string("a\0b", 3)}}, EnvFormat::shell, "Z: the value has a NUL byte"},
        {{{"Z", std::string("a\0b", 3)}}, EnvFormat::json, std::nullopt},
        {{{"U", "\xff"}}, EnvFormat::json, "U: the value is not valid UTF-8"},
        {{{"bad name", "x"}}, EnvFormat::json, "variable name"},
    };
    for (const auto& c : cases) {
        auto problem = render_problem(c.vars, c.format);
        ASSERT_EQ(problem.has_value(), c.problem_part.has_value()) << problem.value_or("");
        if (problem) {
            EXPECT_NE(problem->find(*c.problem_part), std::string::npos) << *problem;
        }
    }
}

// The promise of the bootstrapper, end to end over the pure parts: whatever the
// format, the real value is in no rendered output, and every name is there.
TEST(BootstrapEnv, RealValuesNeverRendered) {
    const std::vector<std::string> values = {
        "ak_live_0123456789abcdef", "sk-with'quote\"and\\backslash",     "ghp_$(id)`whoami`",
        "tok with spaces",          "\xe2\x82\xac-unicode-\xe2\x82\xac",
    };
    for (const auto& value : values) {
        nlohmann::ordered_json input = {{"BACKEND_URL", "https://backend.composio.dev"},
                                        {"COMPOSIO_TOOLROUTER_SESSION_ID", "trs_1"},
                                        {"COMPOSIO_API_KEY", value},
                                        {"CALLBACK_URL_WITH_KEY", "https://hooks.example/?k=" + value},
                                        {"GITHUB_TOKEN", value + "-2"}};
        EnvList vars = parse_ok(input.dump());
        std::string error;
        auto names = choose_secret_names(vars, {}, &error);
        ASSERT_TRUE(names.has_value()) << error;
        auto secrets = take_secrets(vars, *names);
        ASSERT_EQ(secrets.size(), 2u);
        scrub_other_values(vars, secrets);
        set_env(vars, "HTTPS_PROXY", "http://ses_1:tok@127.0.0.1:3128");
        for (EnvFormat format : {EnvFormat::env, EnvFormat::shell, EnvFormat::json}) {
            ASSERT_FALSE(render_problem(vars, format).has_value());
            std::string text = render_env(vars, format);
            EXPECT_EQ(text.find(value), std::string::npos) << text;
            EXPECT_TRUE(leaked_secrets(text, secrets).empty()) << text;
            for (const char* name : {"BACKEND_URL", "COMPOSIO_TOOLROUTER_SESSION_ID", "COMPOSIO_API_KEY",
                                     "CALLBACK_URL_WITH_KEY", "GITHUB_TOKEN", "HTTPS_PROXY"})
                EXPECT_NE(text.find(name), std::string::npos) << name;
            EXPECT_NE(text.find("vaultgate-placeholder-COMPOSIO_API_KEY"), std::string::npos);
        }
    }
}

TEST(BootstrapEnv, LeakCheckFindsValues) {
    std::vector<SecretVar> secrets;
    secrets.push_back({"A_TOKEN", Secret(std::string("abc123"))});
    secrets.push_back({"B_TOKEN", Secret(std::string("zzz"))});
    EXPECT_EQ(leaked_secrets("x=abc123\n", secrets), std::vector<std::string>{"A_TOKEN"});
    EXPECT_TRUE(leaked_secrets("x=abc12\n", secrets).empty());
}

}  // namespace
}  // namespace vaultgate
