// The shared service, auth spec and policy rules. The config loader and the
// JSON codec test how they report a refusal; these tables pin the rules
// themselves, so that both ways in refuse exactly the same values.
#include "vaultgate/credentials/validation.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace vaultgate::validation {
namespace {

// A value that stands for a secret pasted into the wrong field.
const std::string pasted = "sk_live_PASTEDsecret0123";

struct BoolCase {
    std::string text;
    bool want;
};

// A check's verdict: nullopt for accepted, else a substring of the message.
struct CheckCase {
    std::string text;
    std::optional<std::string> error;
};

void expect_check(const CheckCase& c, const std::optional<std::string>& got) {
    SCOPED_TRACE("'" + c.text + "'");
    if (!c.error) {
        EXPECT_FALSE(got.has_value()) << *got;
        return;
    }
    ASSERT_TRUE(got.has_value());
    EXPECT_NE(got->find(*c.error), std::string::npos) << *got;
}

TEST(Validation, Names) {
    const std::vector<BoolCase> cases = {
        {"v", true},
        {"team.a", true},
        {"A_b-c.9", true},
        {"...", true},
        {std::string(max_name_length, 'x'), true},
        {std::string(max_name_length + 1, 'x'), false},
        {"", false},
        {".", false},
        {"..", false},
        {"my vault", false},
        {"a/b", false},
        {"a:b", false},
        {"a%2f", false},
        {"caf\xc3\xa9", false},
        {std::string("a\0b", 3), false},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(is_valid_name(c.text), c.want) << "'" << c.text << "'";
        EXPECT_EQ(!check_name(c.text, "vault").has_value(), c.want) << "'" << c.text << "'";
    }
    const auto why = check_name("a b", "credential");
    ASSERT_TRUE(why);
    EXPECT_EQ(why->rfind("expected a credential name of [A-Za-z0-9_.-]", 0), 0u) << *why;
}

TEST(Validation, HttpTokens) {
    const std::vector<BoolCase> cases = {
        {"x-api-key", true}, {"X_Token", true}, {"a!#$%&'*+-.^_`|~z", true},
        {"", false},         {"x key", false},  {"x:y", false},
        {"x\r\ny", false},   {"(x)", false},    {"x\"y", false},
        {"\xc3\xa9", false}, {"x/y", false},
    };
    for (const auto& c : cases) EXPECT_EQ(is_http_token(c.text), c.want) << "'" << c.text << "'";
}

TEST(Validation, ReservedHeadersInAnyCaseAndUnderscoreSpelling) {
    const std::vector<BoolCase> cases = {
        {"Host", true},
        {"content-length", true},
        {"Content_Length", true},
        {"TRANSFER-ENCODING", true},
        {"Transfer_Encoding", true},
        {"Connection", true},
        {"Keep-Alive", true},
        {"keep_alive", true},
        {"TE", true},
        {"Trailer", true},
        {"Upgrade", true},
        {"Expect", true},
        {"Proxy-Connection", true},
        {"Proxy-Authorization", true},
        {"proxy_authorization", true},
        {"Proxy-Anything", true},
        // Ordinary carriers, and names that only start like a reserved one.
        {"Authorization", false},
        {"x-api-key", false},
        {"Hosts", false},
        {"X-Host", false},
        {"Content-Type", false},
        {"Proxy", false},
        {"Tea", false},
    };
    for (const auto& c : cases) EXPECT_EQ(is_reserved_header(c.text), c.want) << c.text;
}

TEST(Validation, HeaderNames) {
    const std::vector<CheckCase> cases = {
        {"x-api-key", std::nullopt},
        {"Authorization", std::nullopt},
        {"X-Token", std::nullopt},
        {"", "not a valid HTTP header name"},
        {"x key", "not a valid HTTP header name"},
        {"x:y", "not a valid HTTP header name"},
        {"Host", "a framing or hop-by-hop header cannot carry a credential"},
        {"Transfer_Encoding", "a framing or hop-by-hop header cannot carry a credential"},
        {"Proxy-Authorization", "a framing or hop-by-hop header cannot carry a credential"},
    };
    for (const auto& c : cases) expect_check(c, check_header_name(c.text));
}

TEST(Validation, HeaderTemplates) {
    const std::vector<CheckCase> cases = {
        {"{secret}", std::nullopt},
        {"Token {secret}", std::nullopt},
        {"Key={secret};\tv=1", std::nullopt},  // tab is header value text
        {"", "must contain \"{secret}\" exactly once"},
        {"Token abc", "must contain \"{secret}\" exactly once"},
        {"{secret}{secret}", "must contain \"{secret}\" exactly once"},
        {"{secret} {secret}", "must contain \"{secret}\" exactly once"},
        {"{Secret}", "must contain \"{secret}\" exactly once"},
        {"{secret}\r\nX-Evil: 1", "may not contain control characters"},
        {std::string("{secret}\0", 9), "may not contain control characters"},
        {"{secret}\x7f", "may not contain control characters"},
    };
    for (const auto& c : cases) expect_check(c, check_header_template(c.text));
}

TEST(Validation, BasicUsers) {
    const std::vector<CheckCase> cases = {
        {"bot", std::nullopt},
        {"", std::nullopt},  // RFC 7617 allows an empty user-id
        {"user@example.com", std::nullopt},
        {"a b", std::nullopt},
        {"a:b", "may not contain ':' or control characters"},
        {":", "may not contain ':' or control characters"},
        {"a\tb", "may not contain ':' or control characters"},
        {"a\nb", "may not contain ':' or control characters"},
        {"a\x7f", "may not contain ':' or control characters"},
    };
    for (const auto& c : cases) expect_check(c, check_basic_user(c.text));
}

TEST(Validation, QueryParams) {
    const std::vector<CheckCase> cases = {
        {"api_key", std::nullopt},
        {"key", std::nullopt},
        {"a-b.c~d", std::nullopt},
        {"keys[]", std::nullopt},
        {"", "expected a query parameter name"},
        {"a b", "expected a query parameter name"},
        {"a&b=c", "expected a query parameter name"},
        {"a=b", "expected a query parameter name"},
        {"a#b", "expected a query parameter name"},
        {"a%20b", "expected a query parameter name"},
        {"a+b", "expected a query parameter name"},
    };
    for (const auto& c : cases) expect_check(c, check_query_param(c.text));
    EXPECT_TRUE(is_query_param_name("keys[]"));
    EXPECT_FALSE(is_query_param_name("a b"));
}

TEST(Validation, PathPrefixes) {
    const std::vector<CheckCase> cases = {
        {"/", std::nullopt},
        {"/v1", std::nullopt},
        {"/api/v4/", std::nullopt},
        {"/a.b/..c/.d", std::nullopt},  // only segments of dots alone are dot segments
        {"/a%20b/%41", std::nullopt},   // escapes of other bytes are plain text
        // A request path with these is never covered, so a prefix with them would cover nothing.
        {"/a/...", "may not contain ';', a run of dots"},
        {"/%2e%2e", "may not contain ';', a run of dots"},
        {"/v1%2fadmin", "may not contain ';', a run of dots"},
        {"/v1;x", "may not contain ';', a run of dots"},
        {"/v1/%25", "may not contain ';', a run of dots"},
        {"/v1/%00", "may not contain ';', a run of dots"},
        {"/v1/%c0%ae", "may not contain ';', a run of dots"},
        {"", "must start with \"/\""},
        {"api", "must start with \"/\""},
        {"*/api", "must start with \"/\""},
        {"/a b", "may not contain spaces"},
        {"/a?x=1", "may not contain spaces"},
        {"/a#f", "may not contain spaces"},
        {"/a\\b", "may not contain spaces"},
        {"/a\tb", "may not contain spaces"},
        {"/caf\xc3\xa9", "may not contain spaces"},
        {"/.", "may not contain \".\" or \"..\" segments"},
        {"/..", "may not contain \".\" or \"..\" segments"},
        {"/api/..", "may not contain \".\" or \"..\" segments"},
        {"/a/../b", "may not contain \".\" or \"..\" segments"},
        {"/a/./b", "may not contain \".\" or \"..\" segments"},
        {"/api/../", "may not contain \".\" or \"..\" segments"},
    };
    for (const auto& c : cases) expect_check(c, check_path_prefix(c.text));
}

TEST(Validation, ServicePorts) {
    for (std::int64_t ok : {1, 80, 443, 65535}) EXPECT_FALSE(check_service_port(ok)) << ok;
    for (std::int64_t bad : {std::int64_t(0), std::int64_t(-443), std::int64_t(65536), std::int64_t(1) << 40}) {
        const auto why = check_service_port(bad);
        ASSERT_TRUE(why) << bad;
        EXPECT_EQ(*why, "must be between 1 and 65535");
    }
}

TEST(Validation, ServiceHosts) {
    struct HostCase {
        std::string raw;
        std::string normalised;  // when accepted
        std::optional<std::string> error;
    };
    const std::vector<HostCase> cases = {
        {"api.example.com", "api.example.com", std::nullopt},
        {"API.Example.COM.", "api.example.com", std::nullopt},
        {"b\xc3\xbc"
         "cher.example",
         "xn--bcher-kva.example", std::nullopt},
        {"10.1.2.3", "10.1.2.3", std::nullopt},
        {"localhost", "localhost", std::nullopt},
        {"*.example.com", "*.example.com", std::nullopt},
        {"*.Svc.Example.com", "*.svc.example.com", std::nullopt},
        {"", "", "must not be empty"},
        {"a b.example.com", "", "invalid host: "},
        {"a..example.com", "", "invalid host: "},
        {"[fe80::1%eth0]", "", "invalid host: "},
        {"*", "", "invalid host: "},
        {"*.", "", "invalid host: "},
        {"*.*.example.com", "", "invalid host: "},
        {"a.*.example.com", "", "invalid host: "},
        {"*.com", "", "a wildcard must name at least two labels after \"*.\""},
        {"*.localhost", "", "a wildcard must name at least two labels after \"*.\""},
        {"*.10.0.0.1", "", "a wildcard needs a domain name"},
        {"*.[::1]", "", "a wildcard needs a domain name"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE("'" + c.raw + "'");
        std::string host = "unchanged";
        const auto why = check_service_host(c.raw, &host);
        if (!c.error) {
            EXPECT_FALSE(why.has_value()) << *why;
            EXPECT_EQ(host, c.normalised);
        } else {
            ASSERT_TRUE(why.has_value()) << host;
            EXPECT_NE(why->find(*c.error), std::string::npos) << *why;
            EXPECT_EQ(host, "unchanged");
        }
    }
}

TEST(Validation, AuthTypes) {
    EXPECT_EQ(parse_auth_type("api-key"), AuthType::api_key);
    EXPECT_EQ(parse_auth_type("bearer"), AuthType::bearer);
    EXPECT_EQ(parse_auth_type("basic"), AuthType::basic);
    EXPECT_EQ(parse_auth_type("header"), AuthType::header);
    EXPECT_EQ(parse_auth_type("query"), AuthType::query);
    for (const char* bad : {"", "api_key", "Bearer", "oauth", "apikey"}) EXPECT_FALSE(parse_auth_type(bad)) << bad;
}

TEST(Validation, AuthSpecsThatBuild) {
    AuthSpec spec;
    ASSERT_FALSE(build_auth_spec({{"type", "api-key"}, {"key", "K"}}, &spec));
    EXPECT_EQ(spec.type, AuthType::api_key);
    EXPECT_EQ(spec.header, "x-api-key");  // the default
    EXPECT_EQ(spec.key, "K");

    ASSERT_FALSE(build_auth_spec({{"type", "api-key"}, {"key", "K"}, {"header", "Api-Key"}}, &spec));
    EXPECT_EQ(spec.header, "Api-Key");

    ASSERT_FALSE(build_auth_spec({{"type", "bearer"}, {"key", "TOKEN"}}, &spec));
    EXPECT_EQ(spec.type, AuthType::bearer);
    EXPECT_EQ(spec.key, "TOKEN");
    EXPECT_EQ(spec.header, "x-api-key");  // a fresh spec: nothing left from the last one

    ASSERT_FALSE(build_auth_spec({{"type", "basic"}, {"key", "P"}, {"user", "bot"}}, &spec));
    EXPECT_EQ(spec.type, AuthType::basic);
    EXPECT_EQ(spec.user, "bot");

    ASSERT_FALSE(build_auth_spec(
        {{"type", "header"}, {"key", "K.1"}, {"header", "X-Token"}, {"template", "Token {secret}"}}, &spec));
    EXPECT_EQ(spec.type, AuthType::header);
    EXPECT_EQ(spec.header, "X-Token");
    EXPECT_EQ(spec.value_template, "Token {secret}");

    ASSERT_FALSE(build_auth_spec({{"type", "query"}, {"key", "MAPS"}, {"param", "api_key"}}, &spec));
    EXPECT_EQ(spec.type, AuthType::query);
    EXPECT_EQ(spec.param, "api_key");
}

TEST(Validation, AuthSpecRefusals) {
    struct AuthCase {
        AuthFields fields;
        std::string field;  // "" for the auth object itself
        std::string message;
        bool key_itself = false;
    };
    const std::vector<AuthCase> cases = {
        {{{"key", "K"}}, "", "missing required key 'type' (one of api-key, bearer, basic, header, query, aws-sigv4, "},
        {{{"type", "oauth"}, {"key", "K"}}, "type", "expected one of api-key, bearer, basic, header, query, aws-sigv4, oauth2-client-credentials, "
                                     "github-app, jwt-bearer"},
        {{{"type", "bearer"}}, "", "missing required key 'key' (the credential to inject)"},
        {{{"type", "bearer"}, {"key", ""}}, "key", "expected a credential name of [A-Za-z0-9_.-]"},
        {{{"type", "bearer"}, {"key", "a/b"}}, "key", "expected a credential name of [A-Za-z0-9_.-]"},
        {{{"type", "bearer"}, {"key", ".."}}, "key", "expected a credential name of [A-Za-z0-9_.-]"},
        // A key the type does not read, whatever its value.
        {{{"type", "bearer"}, {"key", "K"}, {"header", "x-api-key"}}, "header", "not used by auth type bearer", true},
        {{{"type", "bearer"}, {"key", "K"}, {"param", "p"}}, "param", "not used by auth type bearer", true},
        {{{"type", "api-key"}, {"key", "K"}, {"user", "bot"}}, "user", "not used by auth type api-key", true},
        {{{"type", "api-key"}, {"key", "K"}, {"template", "{secret}"}},
         "template",
         "not used by auth type api-key",
         true},
        {{{"type", "basic"}, {"key", "K"}, {"user", "u"}, {"header", "X"}},
         "header",
         "not used by auth type basic",
         true},
        {{{"type", "query"}, {"key", "K"}, {"param", "p"}, {"user", "u"}}, "user", "not used by auth type query", true},
        {{{"type", "header"}, {"key", "K"}, {"header", "X"}, {"template", "{secret}"}, {"param", "p"}},
         "param",
         "not used by auth type header",
         true},
        // What each type needs.
        {{{"type", "header"}, {"key", "K"}, {"template", "T {secret}"}},
         "",
         "missing required key 'header' for auth type header"},
        {{{"type", "header"}, {"key", "K"}, {"header", "X-T"}},
         "",
         "missing required key 'template' for auth type header"},
        {{{"type", "basic"}, {"key", "K"}}, "", "missing required key 'user' for auth type basic"},
        {{{"type", "query"}, {"key", "K"}}, "", "missing required key 'param' for auth type query"},
        // Each value's own rule.
        {{{"type", "api-key"}, {"key", "K"}, {"header", "x key"}}, "header", "not a valid HTTP header name"},
        {{{"type", "api-key"}, {"key", "K"}, {"header", "Content-Length"}},
         "header",
         "a framing or hop-by-hop header cannot carry a credential"},
        {{{"type", "header"}, {"key", "K"}, {"header", "Transfer_Encoding"}, {"template", "{secret}"}},
         "header",
         "a framing or hop-by-hop header cannot carry a credential"},
        {{{"type", "header"}, {"key", "K"}, {"header", "X-T"}, {"template", "T"}},
         "template",
         "must contain \"{secret}\" exactly once"},
        {{{"type", "header"}, {"key", "K"}, {"header", "X-T"}, {"template", "{secret}\r\nX: y"}},
         "template",
         "may not contain control characters"},
        {{{"type", "basic"}, {"key", "K"}, {"user", "a:b"}}, "user", "may not contain ':' or control characters"},
        {{{"type", "query"}, {"key", "K"}, {"param", "a&b=c"}},
         "param",
         "expected a query parameter name of [A-Za-z0-9-_.~[]]"},
    };
    for (const auto& c : cases) {
        std::string shown;
        for (const auto& [k, v] : c.fields) shown += k + "=" + v.text + " ";
        SCOPED_TRACE(shown);
        AuthSpec spec;
        spec.key = "untouched";
        const auto err = build_auth_spec(c.fields, &spec);
        ASSERT_TRUE(err.has_value());
        EXPECT_EQ(err->field, c.field);
        EXPECT_EQ(err->message.rfind(c.message, 0), 0u) << err->message;
        EXPECT_EQ(err->key_itself, c.key_itself);
        EXPECT_EQ(spec.key, "untouched");  // a refused spec is not half written
    }
}

// Callers decide whether a value may be quoted; the shared messages never do it.
TEST(Validation, MessagesNeverQuoteTheValue) {
    const std::string p = pasted;
    std::string host;
    const std::vector<std::optional<std::string>> errors = {
        check_name(p + "!", "credential"),
        check_header_name(p + " "),
        check_header_name("Proxy-" + p),
        check_header_template(p),
        check_header_template("{secret}\n" + p),
        check_basic_user(p + ":"),
        check_query_param(p + "="),
        check_path_prefix(p),
        check_path_prefix("/" + p + "/.."),
        check_service_host(p + " x", &host),
        check_service_host("*." + p, &host),
    };
    for (const auto& e : errors) {
        ASSERT_TRUE(e.has_value());
        EXPECT_EQ(e->find(p), std::string::npos) << *e;
    }
    const std::vector<AuthFields> auths = {
        {{"type", p}, {"key", "K"}},
        {{"type", "bearer"}, {"key", p + "/"}},
        {{"type", "header"}, {"key", "K"}, {"header", "X-T"}, {"template", p}},
        {{"type", "api-key"}, {"key", "K"}, {"header", p + " "}},
        {{"type", "basic"}, {"key", "K"}, {"user", p + ":"}},
        {{"type", "query"}, {"key", "K"}, {"param", p + "="}},
    };
    for (const auto& fields : auths) {
        AuthSpec spec;
        const auto err = build_auth_spec(fields, &spec);
        ASSERT_TRUE(err.has_value());
        EXPECT_EQ(err->message.find(p), std::string::npos) << err->message;
    }
}

TEST(Validation, EveryOptionalAuthKeyIsReadBySomeType) {
    // A key in auth_keys that no type reads could never be given; one missing
    // from it would be refused as unknown before these rules saw it.
    const std::vector<AuthFields> full = {
        {{"type", "api-key"}, {"key", "K"}, {"header", "X-K"}},
        {{"type", "basic"}, {"key", "K"}, {"user", "u"}},
        {{"type", "header"}, {"key", "K"}, {"header", "X-K"}, {"template", "{secret}"}},
        {{"type", "query"}, {"key", "K"}, {"param", "p"}},
        {{"type", "aws-sigv4"},
         {"access_key_id", "A"},
         {"secret_access_key", "S"},
         {"session_token", "T"},
         {"region", "us-east-1"},
         {"service", "s3"}},
        {{"type", "oauth2-client-credentials"},
         {"token_url", "https://auth.example/token"},
         {"client_id", "I"},
         {"client_secret", "S"},
         {"scope", "read"},
         {"audience", "api"},
         {"client_auth", "post"}},
        {{"type", "github-app"},
         {"app_id", "1"},
         {"installation_id", "2"},
         {"private_key", "K"},
         {"api_url", "https://ghe.example/api/v3"},
         {"scheme", "basic"}},
        {{"type", "jwt-bearer"},
         {"key", "SA"},
         {"scopes", std::vector<std::string>{"a"}},
         {"token_url", "https://oauth2.example/token"}},
    };
    for (auto key : auth_keys) {
        bool read = false;
        for (const auto& fields : full) {
            AuthSpec spec;
            read = read || (fields.count(key) > 0 && !build_auth_spec(fields, &spec));
        }
        EXPECT_TRUE(read) << key;
    }
}

}  // namespace
}  // namespace vaultgate::validation

namespace vaultgate::validation {
namespace {

TEST(Validation, CredentialValues) {
    EXPECT_FALSE(check_credential_value("sk-live-0123"));
    EXPECT_FALSE(check_credential_value(std::string(max_credential_bytes, 'k')));
    EXPECT_EQ(check_credential_value(""), "must not be empty");
    EXPECT_EQ(check_credential_value(std::string(max_credential_bytes + 1, 'k')), "longer than 16384 bytes");
    for (const std::string& bad : std::vector<std::string>{"a\nb", "a\rb", std::string("a\0b", 3), "a\tb", "a\x7f"})
        EXPECT_EQ(check_credential_value(bad), "must not contain CR, LF, NUL or other control bytes");
}

// The server and the CLI read the admin token file through this one function,
// so a file one of them accepts the other reads the same way.
TEST(Validation, AdminTokenFile) {
    std::string text = "  tok-0123456789abcdef\r\n";
    EXPECT_FALSE(normalise_admin_token(text));
    EXPECT_EQ(text, "tok-0123456789abcdef");
    text = "\ttok-0123456789abcdef";
    EXPECT_FALSE(normalise_admin_token(text));
    EXPECT_EQ(text, "tok-0123456789abcdef");

    text = " short \n";
    EXPECT_EQ(normalise_admin_token(text), "must hold a token of at least 16 characters");
    text = "\n\n";
    EXPECT_EQ(normalise_admin_token(text), "must hold a token of at least 16 characters");
    text = "tok-01234567\n89abcdef";  // two lines
    EXPECT_EQ(normalise_admin_token(text), "holds a control character inside the token");
}

}  // namespace
}  // namespace vaultgate::validation
