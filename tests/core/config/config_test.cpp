#include "vaultgate/config/config.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vaultgate {
namespace {

using namespace std::chrono_literals;

// The example config lives in the source tree; VAULTGATE_SOURCE_DIR is set by
// the build, and the relative candidates cover running from a build directory.
std::string example_config_path() {
    std::vector<std::string> candidates;
#ifdef VAULTGATE_SOURCE_DIR
    candidates.push_back(std::string(VAULTGATE_SOURCE_DIR) + "/config/vaultgate.yaml");
#endif
    for (const char* up : {"", "../", "../../", "../../../"})
        candidates.push_back(std::string(up) + "config/vaultgate.yaml");
    for (const auto& c : candidates)
        if (std::filesystem::exists(c)) return c;
    return {};
}

// Returns the ConfigError message, or "" when parsing succeeded.
std::string error_of(const std::string& yaml) {
    try {
        parse_config(yaml, "t.yaml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

// A vault that later cases can refer to.
const std::string vault_prefix = R"(vaults:
  - name: v
    credentials:
      K: { env: SOME_KEY }
)";

struct ErrorCase {
    const char* name;
    std::string yaml;
    std::string where;     // "t.yaml:LINE:COL: " the message must start with
    std::string fragment;  // must occur in the message
};

class ConfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigErrorTest, NamesPlaceAndProblem) {
    const auto& c = GetParam();
    const auto msg = error_of(c.yaml);
    ASSERT_FALSE(msg.empty()) << "accepted:\n" << c.yaml;
    EXPECT_EQ(msg.substr(0, c.where.size()), c.where) << msg;
    EXPECT_NE(msg.find(c.fragment), std::string::npos) << msg;
}

// Columns are 1-based and point at the offending key or value.
const ErrorCase error_cases[] = {
    {"unknown_top_level_key", "listen:\n  proxy: 127.0.0.1:3128\nbogus: 1\n", "t.yaml:3:1: ",
     "unknown key 'bogus' (allowed: listen, ca, upstream, store, admin, log, limits, mitm, vaults, sessions, "
     "egress_policies)"},
    {"unknown_nested_key", "limits:\n  idle_timeout: 10s\n  idle_timout: 5s\n",
     "t.yaml:3:3: ", "limits: unknown key 'idle_timout' (allowed: max_connections,"},
    {"unknown_key_in_flow_map",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: bearer, kee: K }\n",
     "t.yaml:7:31: ", "vaults[0].services[0].auth: unknown key 'kee'"},
    {"unknown_key_in_listen", "listen:\n  socks: 127.0.0.1:1080\n", "t.yaml:2:3: ", "listen: unknown key 'socks'"},
    {"duplicate_key", "log:\n  level: info\n  level: debug\n",
     "t.yaml:3:3: ", "log: duplicate key 'level' (first at line 2)"},
    {"not_an_integer", "limits:\n  max_connections: many\n",
     "t.yaml:2:20: ", "limits.max_connections: expected an integer, got 'many'"},
    {"quoted_integer",
     vault_prefix + "    services:\n      - host: a.example.com\n        port: \"443\"\n"
                    "        auth: { type: bearer, key: K }\n",
     "t.yaml:7:15: ", "vaults[0].services[0].port: expected an integer, got '443'"},
    {"port_out_of_range",
     vault_prefix + "    services:\n      - host: a.example.com\n        port: 70000\n"
                    "        auth: { type: bearer, key: K }\n",
     "t.yaml:7:15: ", "port: must be between 1 and 65535, got 70000"},
    {"zero_limit", "limits:\n  header_count: 0\n", "t.yaml:2:17: ", "limits.header_count: must be greater than 0"},
    {"negative_limit", "limits:\n  header_count: -5\n", "t.yaml:2:17: ", "expected an integer, got '-5'"},
    {"zero_sign_body_bytes", "limits:\n  sign_body_bytes: 0\n",
     "t.yaml:2:20: ", "limits.sign_body_bytes: must be greater than 0"},
    {"not_a_bool", "egress_policies:\n  p:\n    allow_http: yes\n",
     "t.yaml:3:17: ", "egress_policies.p.allow_http: expected true or false, got 'yes'"},
    {"list_expected", "vaults: {}\n", "t.yaml:1:9: ", "vaults: expected a list, got a map"},
    {"map_expected", "limits: [1, 2]\n", "t.yaml:1:9: ", "limits: expected a map, got a list"},
    {"string_expected", "ca:\n  cert: [a]\n", "t.yaml:2:9: ", "ca.cert: expected a string, got a list"},
    {"empty_string", "store:\n  path: \"\"\n", "t.yaml:2:9: ", "store.path: must not be empty"},
    {"bad_duration_unit", "limits:\n  header_timeout: 10\n",
     "t.yaml:2:19: ", "limits.header_timeout: expected a duration like 10s, 250ms, 2m or 1h, got '10'"},
    {"bad_duration_text", "limits:\n  idle_timeout: 1.5s\n",
     "t.yaml:2:17: ", "limits.idle_timeout: expected a duration"},
    {"zero_duration", "limits:\n  drain_timeout: 0s\n",
     "t.yaml:2:18: ", "limits.drain_timeout: must be greater than 0"},
    {"listen_name_not_ip", "listen:\n  proxy: localhost:3128\n",
     "t.yaml:2:10: ", "listen.proxy: expected IP:PORT or [IPv6]:PORT, got 'localhost:3128'"},
    {"listen_no_port", "listen:\n  proxy: 127.0.0.1\n", "t.yaml:2:10: ", "listen.proxy: expected IP:PORT"},
    {"listen_bad_port", "listen:\n  proxy: 127.0.0.1:99999\n",
     "t.yaml:2:10: ", "listen.proxy: port must be 0-65535 without leading zeros, got '99999'"},
    {"listen_unbracketed_v6", "listen:\n  proxy: ::1:3128\n", "t.yaml:2:10: ", "listen.proxy: expected IP:PORT"},
    {"listen_unix_for_proxy", "listen:\n  proxy: unix:/run/p.sock\n",
     "t.yaml:2:10: ", "listen.proxy: unix sockets are only supported for listen.admin"},
    {"listen_null_proxy", "listen:\n  proxy: null\n", "t.yaml:2:3: ", "listen.proxy: expected IP:PORT"},
    {"listen_clash", "listen:\n  proxy: 127.0.0.1:4000\n  admin: 127.0.0.1:4000\n",
     "t.yaml:3:10: ", "listen.admin: same address as listen.proxy"},
    {"log_level", "log:\n  level: verbose\n",
     "t.yaml:2:10: ", "log.level: expected one of error, warn, info, debug, got 'verbose'"},
    {"inline_credential", "vaults:\n  - name: v\n    credentials:\n      K: sk-live-0123456789\n",
     "t.yaml:4:10: ", "vaults[0].credentials.K: inline values are not allowed; use { env: NAME } or { file: PATH }"},
    {"credential_env_and_file", "vaults:\n  - name: v\n    credentials:\n      K: { env: A, file: /x }\n",
     "t.yaml:4:20: ", "vaults[0].credentials.K: give either env or file, not both"},
    {"credential_bad_env_name", "vaults:\n  - name: v\n    credentials:\n      K: { env: \"sk live\" }\n",
     "t.yaml:4:17: ", "vaults[0].credentials.K.env: expected an environment variable name"},
    {"credential_unknown_source", "vaults:\n  - name: v\n    credentials:\n      K: { vault: x }\n",
     "t.yaml:4:12: ", "vaults[0].credentials.K: unknown key 'vault' (allowed: env, file)"},
    {"auth_key_missing_credential",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: bearer, key: OTHER }\n",
     "t.yaml:7:36: ", "vaults[0].services[0].auth.key: no credential 'OTHER' in vault 'v' (credentials: K)"},
    {"auth_without_key", vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: bearer }\n",
     "t.yaml:7:15: ", "vaults[0].services[0].auth: missing required key 'key'"},
    {"auth_unknown_type",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: oauth, key: K }\n",
     "t.yaml:7:23: ", "auth.type: expected one of api-key, bearer, basic, header, query, aws-sigv4, "
     "oauth2-client-credentials, github-app, jwt-bearer, got 'oauth'"},
    {"auth_key_of_other_type",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: bearer, key: K, param: p }\n",
     "t.yaml:7:39: ", "vaults[0].services[0].auth.param: not used by auth type bearer"},
    {"basic_needs_user",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: basic, key: K }\n",
     "t.yaml:7:15: ", "auth: missing required key 'user' for auth type basic"},
    {"query_needs_param",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: query, key: K }\n",
     "t.yaml:7:15: ", "auth: missing required key 'param' for auth type query"},
    {"header_needs_header",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: header, template: \"T {secret}\", key: K }\n",
     "t.yaml:7:15: ", "auth: missing required key 'header' for auth type header"},
    {"header_needs_template",
     vault_prefix + "    services:\n      - host: a.example.com\n        auth: { type: header, header: X-T, key: K }\n",
     "t.yaml:7:15: ", "auth: missing required key 'template' for auth type header"},
    {"template_without_secret",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: header, header: X-T, template: \"Token abc\", key: K }\n",
     "t.yaml:7:54: ", "auth.template: must contain \"{secret}\" exactly once"},
    {"template_secret_twice",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: header, header: X-T, template: \"{secret}{secret}\", key: K }\n",
     "t.yaml:7:54: ", "auth.template: must contain \"{secret}\" exactly once"},
    {"header_not_a_token",
     vault_prefix +
         "    services:\n      - host: a.example.com\n        auth: { type: api-key, header: \"x key\", key: K }\n",
     "t.yaml:7:40: ", "auth.header: not a valid HTTP header name, got 'x key'"},
    {"header_host",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: api-key, header: Host, key: K }\n",
     "t.yaml:7:40: ", "auth.header: a framing or hop-by-hop header cannot carry a credential, got 'Host'"},
    {"header_content_length",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: header, header: Content-Length, "
                    "template: \"{secret}\", key: K }\n",
     "t.yaml:7:39: ", "a framing or hop-by-hop header cannot carry a credential, got 'Content-Length'"},
    {"header_transfer_encoding_underscore",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: api-key, header: Transfer_Encoding, "
                    "key: K }\n",
     "t.yaml:7:40: ", "a framing or hop-by-hop header cannot carry a credential, got 'Transfer_Encoding'"},
    {"header_connection",
     vault_prefix + "    services:\n      - host: a.example.com\n"
                    "        auth: { type: api-key, header: connection, key: K }\n",
     "t.yaml:7:40: ", "a framing or hop-by-hop header cannot carry a credential, got 'connection'"},
    {"service_without_host",
     vault_prefix + "    services:\n      - port: 443\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:9: ", "vaults[0].services[0]: missing required key 'host'"},
    {"service_bad_host",
     vault_prefix + "    services:\n      - host: \"a b.example.com\"\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:15: ",
     "vaults[0].services[0].host: invalid host: host has a character that is not allowed, or an empty label, "
     "got 'a b.example.com'"},
    {"service_wildcard_tld",
     vault_prefix + "    services:\n      - host: \"*.com\"\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:15: ", "vaults[0].services[0].host: a wildcard must name at least two labels"},
    {"path_prefix_relative",
     vault_prefix + "    services:\n      - host: a.example.com\n        path_prefix: api\n        auth: { type: "
                    "bearer, key: K }\n",
     "t.yaml:7:22: ", "vaults[0].services[0].path_prefix: must start with \"/\", got 'api'"},
    {"path_prefix_dot_segment",
     vault_prefix + "    services:\n      - host: a.example.com\n        path_prefix: /api/..\n        auth: { type: "
                    "bearer, key: K }\n",
     "t.yaml:7:22: ", "may not contain \".\" or \"..\" segments"},
    {"duplicate_service",
     vault_prefix + "    services:\n      - { host: a.example.com, auth: { type: bearer, key: K } }\n"
                    "      - { host: A.example.com., auth: { type: bearer, key: K } }\n",
     "t.yaml:7:9: ", "vaults[0].services[1]: same host, port and path_prefix as vaults[0].services[0]"},
    {"vault_without_name", "vaults:\n  - credentials: {}\n", "t.yaml:2:5: ", "vaults[0]: missing required key 'name'"},
    {"vault_bad_name", "vaults:\n  - name: \"my vault\"\n", "t.yaml:2:11: ",
     "vaults[0].name: expected a vault name of [A-Za-z0-9_.-] (at most 128 characters, not \".\" or \"..\"), "
     "got 'my vault'"},
    {"vault_duplicate_name", "vaults:\n  - name: a\n  - name: a\n",
     "t.yaml:3:11: ", "vaults[1].name: duplicate vault name 'a' (also vaults[0])"},
    {"session_unknown_vault",
     vault_prefix + "egress_policies:\n  default: {}\nsessions:\n  default: { vaults: [v, nope] }\n",
     "t.yaml:8:26: ", "sessions.default.vaults[1]: unknown vault 'nope' (vaults: v)"},
    {"session_unknown_policy",
     vault_prefix + "egress_policies:\n  default: {}\nsessions:\n  s1: { vaults: [v], egress_policy: strict }\n",
     "t.yaml:8:37: ", "sessions.s1.egress_policy: unknown egress policy 'strict' (egress_policies: default)"},
    {"session_default_policy_missing", "sessions:\n  s1: { vaults: [] }\n", "t.yaml:2:7: ",
     "sessions.s1: no egress_policy given and there is no policy named 'default' (no egress_policies are defined)"},
    {"session_unknown_key", "egress_policies:\n  default: {}\nsessions:\n  default: { vault: [] }\n",
     "t.yaml:4:14: ", "sessions.default: unknown key 'vault' (allowed: vaults, egress_policy)"},
    {"bad_domain_rule", "egress_policies:\n  default:\n    allowed_domains: [ok.example.com, \"*.*.example.com\"]\n",
     "t.yaml:3:39: ", "egress_policies.default.allowed_domains[1]: invalid domain rule '*.*.example.com'"},
    {"domain_rule_with_ip", "egress_policies:\n  default:\n    allowed_domains: [10.0.0.1]\n",
     "t.yaml:3:23: ", "egress_policies.default.allowed_domains[0]: invalid domain rule '10.0.0.1'"},
    {"bad_cidr", "egress_policies:\n  default:\n    allowed_cidrs:\n      - 10.0.0.0/8\n      - 10.0.0.0/33\n",
     "t.yaml:5:9: ", "egress_policies.default.allowed_cidrs[1]: expected an IP address or CIDR"},
    {"policy_unknown_key", "egress_policies:\n  default:\n    allow_ftp: true\n",
     "t.yaml:3:5: ", "egress_policies.default: unknown key 'allow_ftp' (allowed: allow_https, allow_http,"},
    {"resolve_bad_ip", "upstream:\n  resolve:\n    api.example.com: not-an-ip\n",
     "t.yaml:3:22: ", "upstream.resolve.api.example.com: expected an IP address, got 'not-an-ip'"},
    {"yaml_unterminated_flow", "listen:\n  proxy: 127.0.0.1:3128\nvaults: [a, b\nlog: {}\n",
     "t.yaml:", "YAML syntax error: "},
    {"yaml_bad_indentation", "listen:\n  proxy: 127.0.0.1:3128\n admin: 127.0.0.1:3190\n",
     "t.yaml:3:2: ", "YAML syntax error: "},
    // yaml-cpp 0.7 takes a stray ',' for an empty document and would loop on it.
    {"yaml_stray_comma", ",\n", "t.yaml:1:1: ", "YAML syntax error: unexpected character ','"},
    {"yaml_stray_comma_text", ", /metrics and more\n", "t.yaml:1:1: ", "YAML syntax error: unexpected character ','"},
    {"yaml_stray_comma_after_end", "log: {}\n...\n,\n", "t.yaml:3:1: ", "YAML syntax error: unexpected character ','"},
    {"yaml_empty_second_document", "log: {}\n---\n", "t.yaml:2:1: ", "only one YAML document is allowed"},
    {"yaml_two_documents", "log: {}\n---\nlog: {}\n", "t.yaml:2:1: ", "only one YAML document is allowed"},
    {"top_level_list", "- a\n- b\n", "t.yaml:1:1: ", "expected a map of sections at the top level, got a list"},
    // A credential is never bound to this machine, vaultgate itself or a public suffix.
    {"service_on_loopback",
     vault_prefix + "    services:\n      - host: 127.0.0.1\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:15: ", "vaults[0].services[0].host: 127.0.0.1 is a loopback address"},
    {"service_on_metadata",
     vault_prefix + "    services:\n      - host: \"[fd00:ec2::254]\"\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:15: ", "vaults[0].services[0].host: fd00:ec2::254 is a cloud metadata address"},
    {"service_on_localhost",
     vault_prefix + "    services:\n      - host: localhost\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:15: ", "vaults[0].services[0].host: localhost names this machine"},
    {"service_on_own_listener",
     "listen:\n  proxy: 10.0.0.5:3128\n" + vault_prefix +
         "    services:\n      - host: 10.0.0.5\n        port: 3128\n        auth: { type: bearer, key: K }\n",
     "t.yaml:8:15: ", "10.0.0.5:3128 is one of vaultgate's own listeners"},
    {"service_public_suffix_wildcard",
     vault_prefix + "    services:\n      - host: \"*.co.uk\"\n        auth: { type: bearer, key: K }\n",
     "t.yaml:6:15: ", "*.co.uk covers every domain under the public suffix co.uk"},
    {"store_path_and_url", "store:\n  path: a.db\n  url: postgresql://db/vaultgate\n", "t.yaml:3:8: ",
     "set either store.path or store.url, not both"},
    {"store_url_not_postgres", "store:\n  url: mysql://db/vaultgate\n", "t.yaml:2:8: ",
     "expected a postgresql:// URL"},
    {"store_url_with_password", "store:\n  url: postgresql://vaultgate:hunter2@db/vaultgate\n", "t.yaml:2:8: ",
     "holds a password"},
    {"store_snapshot_for_a_file_store", "store:\n  path: a.db\n  snapshot_path: s.db\n", "t.yaml:3:18: ",
     "store.snapshot_path: is for a shared store (store.url); a file store is its own snapshot"},
    {"store_snapshot_max_age_zero", "store:\n  url: postgresql://db/vaultgate\n  snapshot_max_age: 0s\n",
     "t.yaml:3:21: ", "store.snapshot_max_age: must be greater than 0"},
    {"store_url_with_password_parameter", "store:\n  url: postgres://db/vaultgate?password=hunter2\n",
     "t.yaml:2:8: ", "holds a password"},
};

INSTANTIATE_TEST_SUITE_P(Table, ConfigErrorTest, ::testing::ValuesIn(error_cases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConfigTest, StoreUrlNamesASharedDatabase) {
    const Config c =
        parse_config("store:\n  url: postgresql://vaultgate@db:5432/vaultgate?sslmode=verify-full\n", "s.yaml");
    ASSERT_TRUE(c.store_url.has_value());
    EXPECT_EQ(*c.store_url, "postgresql://vaultgate@db:5432/vaultgate?sslmode=verify-full");
    EXPECT_FALSE(parse_config("{}\n", "d.yaml").store_url.has_value());
    // A password is refused without being quoted back.
    const auto msg = error_of("store:\n  url: postgresql://vaultgate:hunter2@db/vaultgate\n");
    EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

TEST(ConfigTest, YamlSyntaxErrorCarriesLineAndColumn) {
    // The flow sequence opened on line 3 is never closed; yaml-cpp notices on line 4.
    const auto msg = error_of("listen:\n  proxy: 127.0.0.1:3128\nvaults: [a, b\nlog: {}\n");
    EXPECT_EQ(msg.rfind("t.yaml:4:", 0), 0u) << msg;
}

TEST(ConfigTest, CredentialValuesAreNeverEchoed) {
    const std::vector<std::string> leaky = {
        "vaults:\n  - name: v\n    credentials:\n      K: sk-live-SECRETVALUE\n",
        "vaults:\n  - name: v\n    credentials:\n      K: { env: \"sk-live-SECRETVALUE\" }\n",
        "vaults:\n  - name: v\n    credentials:\n      K: [sk-live-SECRETVALUE]\n",
        vault_prefix +
            "    services:\n      - host: a.example.com\n"
            "        auth: { type: header, header: X-T, template: \"sk-live-SECRETVALUE\", key: K }\n",
    };
    for (const auto& yaml : leaky) {
        const auto msg = error_of(yaml);
        ASSERT_FALSE(msg.empty()) << yaml;
        EXPECT_EQ(msg.find("SECRETVALUE"), std::string::npos) << msg;
    }
}

TEST(ConfigTest, EmptyMapGivesDefaults) {
    for (const char* text : {"{}\n", "# every default\n{}\n", "---\n{}\n"}) {
        const Config c = parse_config(text, "empty.yaml");
        EXPECT_EQ(c.source_path, "empty.yaml");
        EXPECT_EQ(c.listen_proxy.to_string(), "127.0.0.1:3128");
        EXPECT_FALSE(c.listen_transparent.has_value());
        EXPECT_EQ(c.listen_admin.to_string(), "127.0.0.1:3190");
        EXPECT_EQ(c.ca_cert, "certs/ca.pem");
        EXPECT_EQ(c.ca_key, "certs/ca-key.pem");
        EXPECT_EQ(c.upstream_ca_file, "system");
        EXPECT_TRUE(c.upstream_resolve.empty());
        EXPECT_EQ(c.store_path, "vaultgate.db");
        EXPECT_FALSE(c.store_master_key_file.has_value());
        EXPECT_FALSE(c.admin_token_file.has_value());
        EXPECT_EQ(c.log_access, "stdout");
        EXPECT_EQ(c.log_level, "info");
        EXPECT_EQ(c.limits.max_connections, 10000u);
        EXPECT_EQ(c.limits.max_connections_per_client, 1000u);
        EXPECT_EQ(c.limits.header_bytes, 65536u);
        EXPECT_EQ(c.limits.header_count, 100u);
        EXPECT_EQ(c.limits.handshake_timeout, 10s);
        EXPECT_EQ(c.limits.header_timeout, 10s);
        EXPECT_EQ(c.limits.idle_timeout, 60s);
        EXPECT_EQ(c.limits.drain_timeout, 15s);
        EXPECT_EQ(c.limits.connect_timeout, 10s);
        EXPECT_EQ(c.limits.response_timeout, 60s);
        EXPECT_EQ(c.limits.upstream_idle_timeout, 30s);
        EXPECT_EQ(c.limits.worker_threads, 0u);
        EXPECT_EQ(c.limits.admin_connections, 64u);
        EXPECT_EQ(c.limits.sign_body_bytes, 8u * 1024 * 1024);
        // No sessions, vaults or policies unless written down: then every
        // request needs Proxy-Authorization.
        EXPECT_TRUE(c.vaults.empty());
        EXPECT_TRUE(c.sessions.empty());
        EXPECT_TRUE(c.egress_policies.empty());
    }
}

// An empty file is more likely truncated than meant; on a reload it would
// quietly drop every vault, session and policy.
TEST(ConfigTest, EmptyFileIsRefused) {
    for (const char* text :
         {"", "\n", "  \n\t\n", "# nothing here\n", "---\n", "---\n# only a comment\n...\n", "~\n", "null\n"}) {
        const auto msg = error_of(text);
        EXPECT_EQ(msg.rfind("t.yaml:", 0), 0u) << "'" << text << "': " << msg;
        EXPECT_NE(msg.find("the config file is empty"), std::string::npos) << "'" << text << "': " << msg;
    }
}

TEST(ConfigTest, NulInAnyStringIsRefusedWithItsPlace) {
    const ErrorCase cases[] = {
        {"escape_zero", "store:\n  path: \"a\\0b\"\n", "t.yaml:2:9: ", "NUL byte"},
        {"escape_hex", "log:\n  access: \"/tmp/x\\x00.log\"\n", "t.yaml:2:11: ", "NUL byte"},
        {"escape_unicode", "admin:\n  token_file: \"\\u0000\"\n", "t.yaml:2:15: ", "NUL byte"},
        {"in_a_key", "listen:\n  \"proxy\\0\": 127.0.0.1:3128\n", "t.yaml:2:3: ", "NUL byte"},
        {"in_a_list", "egress_policies:\n  p:\n    allowed_domains: [a.example.com, \"b\\0.example.com\"]\n",
         "t.yaml:3:38: ", "NUL byte"},
        {"in_a_credential", vault_prefix + "      L: \"sk-\\0-SECRET\"\n", "t.yaml:5:10: ", "NUL byte"},
    };
    for (const auto& c : cases) {
        const auto msg = error_of(c.yaml);
        EXPECT_EQ(msg.substr(0, c.where.size()), c.where) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.fragment), std::string::npos) << c.name << ": " << msg;
        EXPECT_EQ(msg.find("SECRET"), std::string::npos) << c.name << ": " << msg;
    }
    // A NUL byte written raw into the file is refused too.
    const auto raw = error_of(std::string("store:\n  path: a\0b\n", 19));
    EXPECT_EQ(raw.rfind("t.yaml:2:10: ", 0), 0u) << raw;
    EXPECT_NE(raw.find("NUL byte"), std::string::npos) << raw;
}

TEST(ConfigTest, TunnelSniCheckCanBeTurnedOff) {
    const Config c = parse_config("egress_policies:\n  loose: { tunnel_sni_check: false }\n", "t.yaml");
    EXPECT_FALSE(c.egress_policies.at("loose").tunnel_sni_check);
}

TEST(ConfigTest, PartialSectionsKeepOtherDefaults) {
    const Config c = parse_config(R"(
listen:
  admin: unix:/run/vaultgate/admin.sock
limits:
  idle_timeout: 2m
  header_count: 50
  sign_body_bytes: 1024
log:
upstream:
  resolve:
    API.Example.COM.: 192.0.2.10
    v6.example.com: "2001:db8::1"
)",
                                  "p.yaml");
    EXPECT_EQ(c.listen_proxy.to_string(), "127.0.0.1:3128");
    EXPECT_TRUE(c.listen_admin.is_unix());
    EXPECT_EQ(c.listen_admin.unix_path, "/run/vaultgate/admin.sock");
    EXPECT_EQ(c.listen_admin.to_string(), "unix:/run/vaultgate/admin.sock");
    EXPECT_EQ(c.limits.idle_timeout, 120s);
    EXPECT_EQ(c.limits.header_count, 50u);
    EXPECT_EQ(c.limits.sign_body_bytes, 1024u);
    EXPECT_EQ(c.limits.header_timeout, 10s);
    EXPECT_EQ(c.log_level, "info");
    ASSERT_EQ(c.upstream_resolve.size(), 2u);
    EXPECT_EQ(c.upstream_resolve.at("api.example.com"), "192.0.2.10");
    EXPECT_EQ(c.upstream_resolve.at("v6.example.com"), "2001:db8::1");
}

TEST(ConfigTest, AdminConnectionsIsACountOfItsOwn) {
    const Config c = parse_config("limits:\n  admin_connections: 4\n  max_connections: 100\n", "a.yaml");
    EXPECT_EQ(c.limits.admin_connections, 4u);
    EXPECT_EQ(c.limits.max_connections, 100u);
    EXPECT_THROW(parse_config("limits:\n  admin_connections: 0\n", "a.yaml"), ConfigError);
    EXPECT_THROW(parse_config("limits:\n  admin_connections: many\n", "a.yaml"), ConfigError);
}

TEST(ConfigTest, WorkerThreadsAreAutoOrACountUpTo256) {
    EXPECT_EQ(parse_config("limits:\n  upstream_idle_timeout: 250ms\n", "w.yaml").limits.upstream_idle_timeout, 250ms);
    EXPECT_THROW(parse_config("limits:\n  upstream_idle_timeout: 0s\n", "w.yaml"), ConfigError);
    EXPECT_EQ(parse_config("limits:\n  worker_threads: 3\n", "w.yaml").limits.worker_threads, 3u);
    EXPECT_EQ(parse_config("limits:\n  worker_threads: 0\n", "w.yaml").limits.worker_threads, 0u);
    for (const char* bad :
         {"limits:\n  worker_threads: 257\n", "limits:\n  worker_threads: -1\n", "limits:\n  worker_threads: many\n"}) {
        try {
            parse_config(bad, "w.yaml");
            FAIL() << bad;
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("limits.worker_threads"), std::string::npos) << e.what();
        }
    }
    // Auto: one per core, never none (an unknown core count reads as 0).
    EXPECT_EQ(auto_worker_threads(0), 1u);
    EXPECT_EQ(auto_worker_threads(1), 1u);
    EXPECT_EQ(auto_worker_threads(8), 8u);
}

TEST(ConfigTest, ListenAddresses) {
    const Config c = parse_config(R"(
listen:
  proxy: "[::1]:0"
  transparent: 0.0.0.0:3129
  admin: 127.0.0.1:0
)",
                                  "l.yaml");
    EXPECT_EQ(c.listen_proxy.host, "::1");
    EXPECT_EQ(c.listen_proxy.port, 0);
    EXPECT_EQ(c.listen_proxy.to_string(), "[::1]:0");
    ASSERT_TRUE(c.listen_transparent.has_value());
    EXPECT_EQ(c.listen_transparent->to_string(), "0.0.0.0:3129");
    EXPECT_EQ(c.listen_admin.to_string(), "127.0.0.1:0");
}

TEST(ConfigTest, FullVaultSessionAndPolicy) {
    const Config c = parse_config(R"(
vaults:
  - name: team.a
    credentials:
      API: { env: TEAM_A_API }
      PASS: { file: /run/secrets/pass }
    services:
      - host: API.Example.com.
        auth: { type: api-key, key: API }
      - host: "*.Svc.Example.com"
        port: 8443
        path_prefix: /v1
        auth: { type: basic, user: bot, key: PASS }
        redact_response: true
      - host: q.example.com
        auth: { type: query, param: api_key, key: API }
      - host: h.example.com
        auth: { type: header, header: X-Token, template: "Token {secret}", key: API }
      - host: b.example.com
        auth: { type: bearer, key: API }
egress_policies:
  open:
    allow_http: true
    allow_package_managers: true
    allowed_domains: [pypi.org, "*.example.org", "api.example.net:8443"]
    allowed_cidrs: [10.1.0.0/16, "fd00::/8"]
sessions:
  worker: { vaults: [team.a], egress_policy: open }
)",
                                  "f.yaml");
    ASSERT_EQ(c.vaults.size(), 1u);
    const auto& v = c.vaults[0];
    EXPECT_EQ(v.name, "team.a");
    ASSERT_EQ(v.credentials.size(), 2u);
    EXPECT_EQ(v.credentials.at("API").kind, CredentialSource::Kind::env);
    EXPECT_EQ(v.credentials.at("API").ref, "TEAM_A_API");
    EXPECT_EQ(v.credentials.at("PASS").kind, CredentialSource::Kind::file);
    EXPECT_EQ(v.credentials.at("PASS").ref, "/run/secrets/pass");
    ASSERT_EQ(v.services.size(), 5u);

    EXPECT_EQ(v.services[0].host, "api.example.com");
    EXPECT_EQ(v.services[0].port, 443);
    EXPECT_EQ(v.services[0].path_prefix, "/");
    EXPECT_EQ(v.services[0].auth.type, AuthType::api_key);
    EXPECT_EQ(v.services[0].auth.header, "x-api-key");  // the default
    EXPECT_EQ(v.services[0].auth.key, "API");
    EXPECT_FALSE(v.services[0].redact_response);

    EXPECT_EQ(v.services[1].host, "*.svc.example.com");
    EXPECT_EQ(v.services[1].port, 8443);
    EXPECT_EQ(v.services[1].path_prefix, "/v1");
    EXPECT_EQ(v.services[1].auth.type, AuthType::basic);
    EXPECT_EQ(v.services[1].auth.user, "bot");
    EXPECT_TRUE(v.services[1].redact_response);

    EXPECT_EQ(v.services[2].auth.type, AuthType::query);
    EXPECT_EQ(v.services[2].auth.param, "api_key");
    EXPECT_EQ(v.services[3].auth.type, AuthType::header);
    EXPECT_EQ(v.services[3].auth.header, "X-Token");
    EXPECT_EQ(v.services[3].auth.value_template, "Token {secret}");
    EXPECT_EQ(v.services[4].auth.type, AuthType::bearer);

    ASSERT_EQ(c.egress_policies.size(), 1u);
    const auto& p = c.egress_policies.at("open");
    EXPECT_EQ(p.name, "open");
    EXPECT_TRUE(p.allow_https);       // not written: the EgressPolicy default
    EXPECT_TRUE(p.tunnel_sni_check);  // likewise
    EXPECT_TRUE(p.allow_http);
    EXPECT_TRUE(p.allow_package_managers);
    ASSERT_EQ(p.allowed_domains.size(), 3u);
    EXPECT_EQ(p.allowed_domains[0].host, "pypi.org");
    EXPECT_TRUE(p.allowed_domains[1].wildcard);
    EXPECT_EQ(p.allowed_domains[2].port, std::optional<std::uint16_t>(8443));
    EXPECT_EQ(p.allowed_cidrs.size(), 2u);

    ASSERT_EQ(c.sessions.size(), 1u);
    EXPECT_EQ(c.sessions.at("worker").vaults, std::vector<std::string>{"team.a"});
    EXPECT_EQ(c.sessions.at("worker").egress_policy, "open");
}

TEST(ConfigTest, ExampleConfigParses) {
    const auto path = example_config_path();
    ASSERT_FALSE(path.empty()) << "config/vaultgate.yaml not found; define VAULTGATE_SOURCE_DIR";
    const Config c = load_config_file(path);
    EXPECT_EQ(c.source_path, path);
    EXPECT_EQ(c.listen_proxy.to_string(), "127.0.0.1:3128");
    EXPECT_EQ(c.listen_admin.to_string(), "127.0.0.1:3190");
    ASSERT_EQ(c.vaults.size(), 1u);
    EXPECT_EQ(c.vaults[0].name, "composio");
    EXPECT_EQ(c.vaults[0].credentials.at("COMPOSIO_API_KEY").kind, CredentialSource::Kind::env);
    EXPECT_EQ(c.vaults[0].credentials.at("COMPOSIO_API_KEY").ref, "COMPOSIO_API_KEY");
    ASSERT_EQ(c.vaults[0].services.size(), 1u);
    const auto& svc = c.vaults[0].services[0];
    EXPECT_EQ(svc.host, "backend.composio.dev");
    EXPECT_EQ(svc.port, 443);
    EXPECT_EQ(svc.auth.type, AuthType::api_key);
    EXPECT_EQ(svc.auth.header, "x-api-key");
    EXPECT_EQ(svc.auth.key, "COMPOSIO_API_KEY");
    EXPECT_TRUE(svc.redact_response);
    ASSERT_TRUE(c.sessions.count("default"));
    EXPECT_EQ(c.sessions.at("default").vaults, std::vector<std::string>{"composio"});
    EXPECT_EQ(c.sessions.at("default").egress_policy, "default");
    const auto& policy = c.egress_policies.at("default");
    EXPECT_TRUE(policy.allow_https);
    EXPECT_FALSE(policy.allow_http);
    ASSERT_EQ(policy.allowed_domains.size(), 1u);
    EXPECT_EQ(policy.allowed_domains[0].host, "backend.composio.dev");
}

TEST(ConfigTest, LoadMissingFileNamesThePath) {
    try {
        load_config_file("/nonexistent/vaultgate.yaml");
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/vaultgate.yaml: cannot read config file: ", 0), 0u)
            << e.what();
    }
}

TEST(ConfigTest, LoadFileErrorsUseItsPath) {
    test::TempDir dir;
    const auto file = dir.write("bad.yaml", "log:\n  level: loud\n");
    try {
        load_config_file(file);
        ADD_FAILURE() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(file + ":2:10: log.level:", 0), 0u) << e.what();
    }
}

struct DurationCase {
    const char* text;
    std::optional<std::chrono::milliseconds> want;
};

TEST(ConfigTest, ParseDuration) {
    const DurationCase cases[] = {
        {"10s", 10s},
        {"250ms", 250ms},
        {"2m", 2min},
        {"1h", 1h},
        {"0s", 0ms},
        {"015s", 15s},
        {"", std::nullopt},
        {"10", std::nullopt},
        {"s", std::nullopt},
        {"-1s", std::nullopt},
        {"1.5s", std::nullopt},
        {"10 s", std::nullopt},
        {"10S", std::nullopt},
        {"10sec", std::nullopt},
        {"1d", std::nullopt},
        {"10s ", std::nullopt},
        {"1m30s", std::nullopt},
        {"9999999999999s", std::nullopt},
        {"999999999999h", std::chrono::milliseconds(999999999999LL * 3600000LL)},
    };
    for (const auto& c : cases) EXPECT_EQ(parse_duration(c.text), c.want) << "'" << c.text << "'";
}

struct MatchCase {
    const char* service_host;
    std::uint16_t service_port;
    const char* host;
    std::uint16_t port;
    bool want;
};

TEST(ConfigTest, ServiceMatches) {
    const MatchCase cases[] = {
        {"api.example.com", 443, "api.example.com", 443, true},
        {"api.example.com", 443, "api.example.com", 8443, false},
        {"api.example.com", 443, "x.api.example.com", 443, false},
        {"api.example.com", 443, "example.com", 443, false},
        {"*.example.com", 443, "a.example.com", 443, true},
        {"*.example.com", 443, "a.b.example.com", 443, true},
        {"*.example.com", 443, "example.com", 443, false},  // never the apex
        {"*.example.com", 443, ".example.com", 443, false},
        {"*.example.com", 443, "badexample.com", 443, false},  // label boundary
        {"*.example.com", 443, "a.example.com.evil.net", 443, false},
        {"*.example.com", 443, "a.example.com", 80, false},
        {"*.example.com", 8443, "a.example.com", 8443, true},
    };
    for (const auto& c : cases) {
        ServiceConfig s;
        s.host = c.service_host;
        s.port = c.service_port;
        EXPECT_EQ(s.matches(c.host, c.port), c.want) << c.service_host << " vs " << c.host << ":" << c.port;
    }
}

// The most specific binding wins; two equal ones in one session would leave
// the credential to list order, so the session is refused.
TEST(ConfigTest, ASessionWhoseVaultsBindTheSameHostPortAndPrefixIsAnError) {
    const std::string yaml = R"(
vaults:
  - name: a
    credentials: { K: { env: X } }
    services:
      - { host: api.example.com, path_prefix: /v1/, auth: { type: bearer, key: K } }
  - name: b
    credentials: { K: { env: X } }
    services:
      - { host: api.example.com, path_prefix: /v2/, auth: { type: bearer, key: K } }
      - { host: api.example.com, path_prefix: /v1/, auth: { type: bearer, key: K } }
egress_policies: { default: {} }
sessions:
  apart: { vaults: [a] }
  together: { vaults: [a, b] }
)";
    try {
        parse_config(yaml, "s.yaml");
        FAIL() << "the tie was accepted";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("sessions.together.vaults[1]"), std::string::npos) << what;
        EXPECT_NE(what.find("session 'together'"), std::string::npos) << what;
        EXPECT_NE(what.find("vaults[0].services[0] (vault 'a')"), std::string::npos) << what;
        EXPECT_NE(what.find("vaults[1].services[1] (vault 'b')"), std::string::npos) << what;
        EXPECT_NE(what.find("api.example.com:443 path_prefix /v1/"), std::string::npos) << what;
    }
    // Apart, the same vaults are fine.
    std::string apart = yaml.substr(0, yaml.find("  together:"));
    EXPECT_NO_THROW(parse_config(apart, "s.yaml"));
}

TEST(ConfigTest, MitmAlpnDefaultsToH2ThenHttp11AndTakesEitherAlone) {
    EXPECT_EQ(parse_config("{}\n", "t.yaml").mitm_alpn, (std::vector<std::string>{"h2", "http/1.1"}));
    EXPECT_EQ(parse_config("mitm:\n  alpn: [http/1.1]\n", "t.yaml").mitm_alpn, std::vector<std::string>{"http/1.1"});
    EXPECT_EQ(parse_config("limits:\n  h2_max_concurrent_streams: 8\n", "t.yaml").limits.h2_max_concurrent_streams, 8u);
    for (const char* bad : {"mitm:\n  alpn: [h3]\n", "mitm:\n  alpn: []\n", "mitm:\n  alpn: [h2, h2]\n",
                            "mitm:\n  other: 1\n", "limits:\n  h2_max_concurrent_streams: 0\n"})
        EXPECT_THROW(parse_config(bad, "t.yaml"), ConfigError) << bad;
}

}  // namespace
}  // namespace vaultgate
