// The JSON forms of services and policies: what the admin API accepts and the
// store writes. Round trips must be exact, and every refusal must name the
// field without quoting what was sent.
#include "vaultgate/config/json_codec.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vaultgate {
namespace {

using nlohmann::json;

// A value that stands for a secret pasted into the wrong field.
constexpr std::string_view pasted = "sk_live_PASTEDsecret0123";

void expect_same_service(const ServiceConfig& a, const ServiceConfig& b) {
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.port, b.port);
    EXPECT_EQ(a.path_prefix, b.path_prefix);
    EXPECT_EQ(a.redact_response, b.redact_response);
    EXPECT_EQ(a.auth.type, b.auth.type);
    EXPECT_EQ(a.auth.header, b.auth.header);
    EXPECT_EQ(a.auth.key, b.auth.key);
    EXPECT_EQ(a.auth.user, b.auth.user);
    EXPECT_EQ(a.auth.value_template, b.auth.value_template);
    EXPECT_EQ(a.auth.param, b.auth.param);
    EXPECT_TRUE(a.auth == b.auth);
}

void expect_same_policy(const EgressPolicy& a, const EgressPolicy& b) {
    EXPECT_EQ(a.allow_https, b.allow_https);
    EXPECT_EQ(a.allow_http, b.allow_http);
    EXPECT_EQ(a.allow_package_managers, b.allow_package_managers);
    EXPECT_EQ(a.tunnel_sni_check, b.tunnel_sni_check);
    ASSERT_EQ(a.allowed_domains.size(), b.allowed_domains.size());
    for (std::size_t i = 0; i < a.allowed_domains.size(); ++i) {
        EXPECT_EQ(a.allowed_domains[i].host, b.allowed_domains[i].host);
        EXPECT_EQ(a.allowed_domains[i].wildcard, b.allowed_domains[i].wildcard);
        EXPECT_EQ(a.allowed_domains[i].port, b.allowed_domains[i].port);
    }
    ASSERT_EQ(a.allowed_cidrs.size(), b.allowed_cidrs.size());
    for (std::size_t i = 0; i < a.allowed_cidrs.size(); ++i) {
        EXPECT_EQ(a.allowed_cidrs[i].base, b.allowed_cidrs[i].base);
        EXPECT_EQ(a.allowed_cidrs[i].prefix_len, b.allowed_cidrs[i].prefix_len);
    }
}

ServiceConfig decode_service(const json& j) {
    std::string error;
    auto s = service_from_json(j, &error);
    EXPECT_TRUE(s.has_value()) << error;
    return s.value_or(ServiceConfig{});
}

std::string service_error(const json& j) {
    std::string error;
    auto s = service_from_json(j, &error);
    EXPECT_FALSE(s.has_value()) << j.dump();
    return error;
}

std::string policy_error(const json& j) {
    std::string error;
    auto p = policy_from_json(j, &error);
    EXPECT_FALSE(p.has_value()) << j.dump();
    return error;
}

// One service of each auth type, in canonical (already normalised) form.
std::vector<json> canonical_services() {
    return {
        json::parse(R"({"host":"backend.composio.dev","port":443,"path_prefix":"/","redact_response":true,
                        "auth_config":{"type":"api-key","header":"x-api-key","key":"COMPOSIO_API_KEY"}})"),
        json::parse(R"({"host":"*.example.com","port":8443,"path_prefix":"/v1","redact_response":false,
                        "auth_config":{"type":"bearer","key":"TOKEN"}})"),
        json::parse(R"({"host":"git.example.org","port":443,"path_prefix":"/api/v4","redact_response":false,
                        "auth_config":{"type":"basic","user":"bot","key":"GIT_PASSWORD"}})"),
        json::parse(R"({"host":"api.example.net","port":443,"path_prefix":"/","redact_response":true,
                        "auth_config":{"type":"header","header":"X-Token","template":"Token {secret}","key":"K.1"}})"),
        json::parse(R"({"host":"maps.example.com","port":443,"path_prefix":"/","redact_response":false,
                        "auth_config":{"type":"query","param":"api_key","key":"MAPS"}})"),
        json::parse(R"({"host":"10.1.2.3","port":9000,"path_prefix":"/","redact_response":false,
                        "auth_config":{"type":"api-key","header":"Api-Key","key":"K"}})"),
        json::parse(R"({"host":"*.amazonaws.com","port":443,"path_prefix":"/","redact_response":false,
                        "auth_config":{"type":"aws-sigv4","access_key_id":"AK","secret_access_key":"SK",
                                       "session_token":"ST","region":"us-east-1","service":"bedrock"}})"),
        json::parse(R"({"host":"api.example.com","port":443,"path_prefix":"/","redact_response":true,
                        "auth_config":{"type":"oauth2-client-credentials","token_url":"https://auth.example.com/t",
                                       "client_id":"CID","client_secret":"CS","scope":"read write",
                                       "audience":"api","client_auth":"post"}})"),
        json::parse(R"({"host":"github.com","port":443,"path_prefix":"/","redact_response":false,
                        "auth_config":{"type":"github-app","app_id":"123456","installation_id":"7890",
                                       "private_key":"GH_KEY","api_url":"https://api.github.com","scheme":"basic"}})"),
        json::parse(R"({"host":"storage.googleapis.com","port":443,"path_prefix":"/","redact_response":false,
                        "auth_config":{"type":"jwt-bearer","key":"SA",
                                       "scopes":["https://www.googleapis.com/auth/cloud-platform"]}})"),
    };
}

TEST(JsonCodecService, CanonicalJsonRoundTripsExactly) {
    for (const auto& j : canonical_services()) {
        const auto service = decode_service(j);
        EXPECT_EQ(service_to_json(service), j) << j.dump();
        expect_same_service(decode_service(service_to_json(service)), service);
    }
}

TEST(JsonCodecService, ValuesBuiltInCodeRoundTrip) {
    ServiceConfig s;
    s.host = "*.internal.example.com";
    s.port = 1;
    s.path_prefix = "/a/b";
    s.auth.type = AuthType::header;
    s.auth.header = "Authorization-Extra";
    s.auth.value_template = "Key={secret};";
    s.auth.key = "a_b-c.d";
    s.redact_response = true;
    expect_same_service(decode_service(service_to_json(s)), s);
    // Text round trip too, as the store does it.
    expect_same_service(decode_service(json::parse(service_to_json(s).dump())), s);
}

TEST(JsonCodecService, OptionalKeysTakeConfigDefaults) {
    const auto s =
        decode_service(json::parse(R"({"host":"api.example.com","auth_config":{"type":"api-key","key":"K"}})"));
    EXPECT_EQ(s.port, 443);
    EXPECT_EQ(s.path_prefix, "/");
    EXPECT_FALSE(s.redact_response);
    EXPECT_EQ(s.auth.type, AuthType::api_key);
    EXPECT_EQ(s.auth.header, "x-api-key");
    // null counts as absent, as in the config file.
    const auto n = decode_service(json::parse(
        R"({"host":"api.example.com","port":null,"path_prefix":null,"redact_response":null,
            "auth_config":{"type":"bearer","key":"K","header":null}})"));
    EXPECT_EQ(n.port, 443);
    EXPECT_EQ(n.path_prefix, "/");
}

TEST(JsonCodecService, HostIsNormalised) {
    auto s = decode_service(json::parse(R"({"host":"API.Example.COM.","auth_config":{"type":"bearer","key":"K"}})"));
    EXPECT_EQ(s.host, "api.example.com");
    s = decode_service(json::parse(R"({"host":"*.Example.COM","auth_config":{"type":"bearer","key":"K"}})"));
    EXPECT_EQ(s.host, "*.example.com");
    s = decode_service(json::parse(R"({"host":"bücher.example","auth_config":{"type":"bearer","key":"K"}})"));
    EXPECT_EQ(s.host, "xn--bcher-kva.example");
}

TEST(JsonCodecService, PortAcceptsSignedAndUnsignedIntegers) {
    json j = json::parse(R"({"host":"a.example.com","auth_config":{"type":"bearer","key":"K"}})");
    j["port"] = 8443;  // a signed integer when built in code
    EXPECT_EQ(decode_service(j).port, 8443);
    j["port"] = 65535u;
    EXPECT_EQ(decode_service(j).port, 65535);
}

struct CodecErrorCase {
    std::string body;
    std::string expected;  // a substring of the error
};

TEST(JsonCodecService, EachValidationErrorNamesTheField) {
    const std::string auth = R"("auth_config":{"type":"bearer","key":"K"})";
    const std::vector<CodecErrorCase> cases = {
        {R"([1,2])", "expected an object, got a list"},
        {R"({"host":"a.example.com",)" + auth + R"(,"hots":1})", "unknown key 'hots'"},
        {R"({)" + auth + "}", "missing required key 'host'"},
        {R"({"host":7,)" + auth + "}", "host: expected a string, got an integer"},
        {R"({"host":"",)" + auth + "}", "host: must not be empty"},
        {R"({"host":"exa mple.com",)" + auth + "}", "host: invalid host"},
        {R"({"host":"a..example.com",)" + auth + "}", "host: invalid host"},
        {R"({"host":"[fe80::1%eth0]",)" + auth + "}", "host: invalid host"},
        {R"({"host":"*.com",)" + auth + "}", "host: a wildcard must name at least two labels"},
        {R"({"host":"*.10.0.0.1",)" + auth + "}", "host: a wildcard needs a domain name"},
        {R"({"host":"a.example.com","port":0,)" + auth + "}", "port: must be between 1 and 65535"},
        {R"({"host":"a.example.com","port":65536,)" + auth + "}", "port: must be between 1 and 65535"},
        {R"({"host":"a.example.com","port":-443,)" + auth + "}", "port: must be between 1 and 65535"},
        {R"({"host":"a.example.com","port":18446744073709551615,)" + auth + "}", "port: must be between"},
        {R"({"host":"a.example.com","port":"443",)" + auth + "}", "port: expected an integer, got a string"},
        {R"({"host":"a.example.com","port":443.0,)" + auth + "}", "port: expected an integer, got a number"},
        {R"({"host":"a.example.com","path_prefix":"api",)" + auth + "}", "path_prefix: must start with"},
        {R"({"host":"a.example.com","path_prefix":"/a/../b",)" + auth + "}", "path_prefix: may not contain \".\""},
        {R"({"host":"a.example.com","path_prefix":"/a?x=1",)" + auth + "}", "path_prefix: may not contain spaces"},
        {R"({"host":"a.example.com","path_prefix":"/a b",)" + auth + "}", "path_prefix: may not contain spaces"},
        {R"({"host":"a.example.com","redact_response":"yes",)" + auth + "}", "redact_response: expected true or false"},
        {R"({"host":"a.example.com"})", "missing required key 'auth_config'"},
        {R"({"host":"a.example.com","auth_config":"bearer"})", "auth_config: expected an object, got a string"},
        {R"({"host":"a.example.com","auth_config":{"key":"K"}})", "auth_config: missing required key 'type'"},
        {R"({"host":"a.example.com","auth_config":{"type":"oauth","key":"K"}})",
         "auth_config.type: expected one of api-key, bearer, basic, header, query"},
        {R"({"host":"a.example.com","auth_config":{"type":"bearer"}})", "auth_config: missing required key 'key'"},
        {R"({"host":"a.example.com","auth_config":{"type":"bearer","key":"a/b"}})",
         "auth_config.key: expected a credential name"},
        {R"({"host":"a.example.com","auth_config":{"type":"bearer","key":""}})",
         "auth_config.key: expected a credential name"},
        {R"({"host":"a.example.com","auth_config":{"type":"bearer","key":"K","header":"x-api-key"}})",
         "auth_config.header: not used by auth type bearer"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","user":"bot"}})",
         "auth_config.user: not used by auth type api-key"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","colour":"red"}})",
         "auth_config: unknown key 'colour'"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","header":"x api key"}})",
         "auth_config.header: not a valid HTTP header name"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","header":""}})",
         "auth_config.header: not a valid HTTP header name"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","header":"Content-Length"}})",
         "auth_config.header: a framing or hop-by-hop header"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","header":"Transfer_Encoding"}})",
         "auth_config.header: a framing or hop-by-hop header"},
        {R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","header":"Proxy-Authorization"}})",
         "auth_config.header: a framing or hop-by-hop header"},
        {R"({"host":"a.example.com","auth_config":{"type":"header","key":"K","template":"T {secret}"}})",
         "auth_config: missing required key 'header' for auth type header"},
        {R"({"host":"a.example.com","auth_config":{"type":"header","key":"K","header":"X-T"}})",
         "auth_config: missing required key 'template' for auth type header"},
        {R"({"host":"a.example.com","auth_config":{"type":"header","key":"K","header":"X-T","template":"T"}})",
         "auth_config.template: must contain \"{secret}\" exactly once"},
        {R"({"host":"a.example.com","auth_config":{"type":"header","key":"K","header":"X-T","template":"{secret}{secret}"}})",
         "auth_config.template: must contain \"{secret}\" exactly once"},
        {R"({"host":"a.example.com","auth_config":{"type":"header","key":"K","header":"X-T","template":"{secret}\r\nX: y"}})",
         "auth_config.template: may not contain control characters"},
        {R"({"host":"a.example.com","auth_config":{"type":"basic","key":"K"}})",
         "auth_config: missing required key 'user' for auth type basic"},
        {R"({"host":"a.example.com","auth_config":{"type":"basic","key":"K","user":"a:b"}})",
         "auth_config.user: may not contain ':'"},
        {R"({"host":"a.example.com","auth_config":{"type":"basic","key":"K","user":"a\tb"}})",
         "auth_config.user: may not contain ':'"},
        {R"({"host":"a.example.com","auth_config":{"type":"query","key":"K"}})",
         "auth_config: missing required key 'param' for auth type query"},
        {R"({"host":"a.example.com","auth_config":{"type":"query","key":"K","param":"a b"}})",
         "auth_config.param: expected a query parameter name"},
        {R"({"host":"a.example.com","auth_config":{"type":"query","key":"K","param":"a&b=c"}})",
         "auth_config.param: expected a query parameter name"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.body);
        const auto error = service_error(json::parse(c.body));
        EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    }
}

TEST(JsonCodecService, ErrorsNeverQuoteWhatWasSent) {
    const std::string p(pasted);
    const std::vector<std::string> bodies = {
        R"({"host":")" + p + R"( x","auth_config":{"type":"bearer","key":"K"}})",
        R"({"host":"a.example.com","auth_config":{"type":")" + p + R"(","key":"K"}})",
        R"({"host":"a.example.com","auth_config":{"type":"bearer","key":")" + p + R"(!"}})",
        R"({"host":"a.example.com","auth_config":{"type":"header","key":"K","header":"X-T","template":")" + p +
            R"("}})",
        R"({"host":"a.example.com","auth_config":{"type":"api-key","key":"K","header":")" + p + R"( "}})",
        R"({"host":"a.example.com","auth_config":{"type":"basic","key":"K","user":")" + p + R"(:"}})",
        R"({"host":"a.example.com","auth_config":{"type":"query","key":"K","param":")" + p + R"(="}})",
        R"({"host":"a.example.com","path_prefix":")" + p + R"(","auth_config":{"type":"bearer","key":"K"}})",
        // A secret used as a key name is not quoted either.
        R"({"host":"a.example.com",")" + p + R"(!":1,"auth_config":{"type":"bearer","key":"K"}})",
    };
    for (const auto& body : bodies) {
        const auto error = service_error(json::parse(body));
        EXPECT_FALSE(error.empty());
        EXPECT_EQ(error.find(p), std::string::npos) << error;
    }
}

TEST(JsonCodecService, NullErrorPointerIsAllowed) {
    EXPECT_FALSE(service_from_json(json::array(), nullptr));
    EXPECT_FALSE(policy_from_json(json::array(), nullptr));
}

TEST(JsonCodecPolicy, RoundTripKeepsRuleText) {
    const json j = json::parse(R"({
        "allow_https": true, "allow_http": true, "allow_package_managers": true,
        "allowed_domains": ["api.example.com", "*.example.com:8443", "plain.example.org:80", "xn--bcher-kva.example"],
        "allowed_cidrs": ["10.0.0.0/8", "fd00::/8", "192.0.2.1/32", "2001:db8::1/128", "::ffff:10.0.0.0/104"],
        "tunnel_sni_check": false
    })");
    std::string error;
    const auto policy = policy_from_json(j, &error);
    ASSERT_TRUE(policy) << error;
    EXPECT_EQ(policy_to_json(*policy), j);
    ASSERT_EQ(policy->allowed_domains.size(), 4u);
    EXPECT_TRUE(policy->allowed_domains[1].wildcard);
    EXPECT_EQ(policy->allowed_domains[1].host, "example.com");
    EXPECT_EQ(policy->allowed_domains[1].port, 8443);
    const auto again = policy_from_json(policy_to_json(*policy), &error);
    ASSERT_TRUE(again) << error;
    expect_same_policy(*again, *policy);
}

TEST(JsonCodecPolicy, InputIsNormalisedToCanonicalText) {
    const json j = json::parse(R"({"allowed_domains":["API.Example.com.", "*.Bücher.example:443"],
                                   "allowed_cidrs":["10.1.2.3/8", "192.0.2.7", "FD00::1/8"]})");
    std::string error;
    const auto policy = policy_from_json(j, &error);
    ASSERT_TRUE(policy) << error;
    const auto out = policy_to_json(*policy);
    EXPECT_EQ(out["allowed_domains"], json::parse(R"(["api.example.com", "*.xn--bcher-kva.example:443"])"));
    EXPECT_EQ(out["allowed_cidrs"], json::parse(R"(["10.0.0.0/8", "192.0.2.7/32", "fd00::/8"])"));
}

TEST(JsonCodecPolicy, AbsentKeysTakeConfigDefaults) {
    std::string error;
    const auto p = policy_from_json(json::object(), &error);
    ASSERT_TRUE(p) << error;
    EXPECT_TRUE(p->allow_https);
    EXPECT_FALSE(p->allow_http);
    EXPECT_FALSE(p->allow_package_managers);
    EXPECT_TRUE(p->allowed_domains.empty());
    EXPECT_TRUE(p->allowed_cidrs.empty());
    EXPECT_TRUE(p->tunnel_sni_check);
    EXPECT_TRUE(p->name.empty());
    const auto n = policy_from_json(json::parse(R"({"allow_https":null,"allowed_domains":null})"), &error);
    ASSERT_TRUE(n) << error;
    EXPECT_TRUE(n->allow_https);
}

TEST(JsonCodecPolicy, BuiltPolicyRoundTrips) {
    EgressPolicy p;
    p.allow_https = false;
    p.allow_http = true;
    std::string why;
    p.allowed_domains.push_back(*DomainRule::parse("*.a.example.com:1", &why));
    p.allowed_domains.push_back(*DomainRule::parse("b.example.com", &why));
    p.allowed_cidrs.push_back(*parse_cidr("0.0.0.0/0"));
    p.allowed_cidrs.push_back(*parse_cidr("::/0"));
    std::string error;
    const auto back = policy_from_json(json::parse(policy_to_json(p).dump()), &error);
    ASSERT_TRUE(back) << error;
    expect_same_policy(*back, p);
}

TEST(JsonCodecPolicy, EachValidationErrorNamesTheField) {
    const std::vector<CodecErrorCase> cases = {
        {R"("default")", "expected an object, got a string"},
        {R"({"allow_https":"true"})", "allow_https: expected true or false, got a string"},
        {R"({"allow_http":1})", "allow_http: expected true or false, got an integer"},
        {R"({"allow_package_managers":[]})", "allow_package_managers: expected true or false, got a list"},
        {R"({"allowed_domains":"a.example.com"})", "allowed_domains: expected a list, got a string"},
        {R"({"allowed_domains":["a.example.com", 5]})", "allowed_domains[1]: expected a string, got an integer"},
        {R"({"allowed_domains":[""]})", "allowed_domains[0]: invalid domain rule"},
        {R"({"allowed_domains":["*.*.example.com"]})", "allowed_domains[0]: invalid domain rule"},
        {R"({"allowed_domains":["a.example.com:0"]})", "allowed_domains[0]: invalid domain rule"},
        {R"({"allowed_domains":["10.0.0.1"]})",
         "allowed_domains[0]: invalid domain rule: IP addresses belong in allowed_cidrs"},
        {R"({"allowed_domains":["a b.example.com"]})", "allowed_domains[0]: invalid domain rule"},
        {R"({"allowed_cidrs":{}})", "allowed_cidrs: expected a list, got an object"},
        {R"({"allowed_cidrs":["10.0.0.0/33"]})", "allowed_cidrs[0]: expected an IP address or CIDR"},
        {R"({"allowed_cidrs":["10.0.0.0/8", "example.com"]})", "allowed_cidrs[1]: expected an IP address or CIDR"},
        {R"({"allowed_cidrs":["010.0.0.0/8"]})", "allowed_cidrs[0]: expected an IP address or CIDR"},
        {R"({"allowed_cidrs":[null]})", "allowed_cidrs[0]: expected a string, got null"},
        {R"({"allow_https":true,"name":"x"})", "unknown key 'name'"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.body);
        const auto error = policy_error(json::parse(c.body));
        EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    }
}

TEST(JsonCodecPolicy, ErrorsNeverQuoteWhatWasSent) {
    const std::string p(pasted);
    for (const auto& body : {R"({"allowed_domains":[")" + p + R"( x"]})", R"({"allowed_cidrs":[")" + p + R"("]})",
                             R"({")" + p + R"(":true})"}) {
        const auto error = policy_error(json::parse(body));
        EXPECT_FALSE(error.empty());
        EXPECT_EQ(error.find(p), std::string::npos) << error;
    }
}

TEST(JsonCodecText, RulesAndCidrsPrintAsTheyParse) {
    std::string why;
    for (std::string text : {"a.example.com", "*.example.com", "*.example.com:8443", "x.example.org:80"}) {
        const auto rule = DomainRule::parse(text, &why);
        ASSERT_TRUE(rule) << text;
        EXPECT_EQ(domain_rule_text(*rule), text);
    }
    for (std::string text : {"10.0.0.0/8", "0.0.0.0/0", "192.0.2.1/32", "fd00::/8", "::1/128", "::/0"}) {
        const auto cidr = parse_cidr(text);
        ASSERT_TRUE(cidr) << text;
        EXPECT_EQ(cidr_text(*cidr), text);
    }
    EXPECT_EQ(auth_type_name(AuthType::api_key), "api-key");
    EXPECT_EQ(auth_type_name(AuthType::query), "query");
}

// --- request body text ---

TEST(JsonCodecTest, ParseJsonTextRefusesAKeyNamedTwiceAtAnyDepth) {
    const struct {
        const char* text;
        JsonTextError expected;
    } cases[] = {
        {R"({"name":"a"})", JsonTextError::none},
        {R"({"name":"a","Name":"b","nested":{"name":"c"},"list":[{"name":"d"},{"name":"e"}]})", JsonTextError::none},
        {R"({})", JsonTextError::none},
        {R"([1,2])", JsonTextError::none},
        {R"({"name":"a","name":"b"})", JsonTextError::duplicate_key},
        {R"({"name":"a","name":"a"})", JsonTextError::duplicate_key},
        {R"({"auth_config":{"type":"bearer","key":"K","key":"L"}})", JsonTextError::duplicate_key},
        {R"({"egress_policy":{"allowed_domains":[],"allowed_domains":["x.example.com"]}})",
         JsonTextError::duplicate_key},
        {R"({"list":[{"a":1},{"b":2,"b":3}]})", JsonTextError::duplicate_key},
        {R"({"a":{"k":1},"b":{"k":2},"c":1,"c":2})", JsonTextError::duplicate_key},
        // The same key escaped differently is still the same key.
        {R"({"name":"a","n\u0061me":"b"})", JsonTextError::duplicate_key},
        {R"({"name":)", JsonTextError::invalid},
        {"", JsonTextError::invalid},
    };
    for (const auto& c : cases) {
        JsonTextError error = JsonTextError::none;
        const json parsed = parse_json_text(c.text, &error);
        EXPECT_EQ(error, c.expected) << c.text;
        if (c.expected == JsonTextError::none) {
            EXPECT_EQ(parsed, json::parse(c.text)) << c.text;
        }
        if (c.expected == JsonTextError::invalid) {
            EXPECT_TRUE(parsed.is_discarded()) << c.text;
        }
    }
}

}  // namespace
}  // namespace vaultgate
