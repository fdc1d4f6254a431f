// Injection is checked on the serialised-level shape the origin would see:
// exactly one copy of the target header, nothing else changed.
#include "vaultgate/credentials/inject.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace vaultgate {
namespace {

RequestHead make_head(std::vector<Header> headers, std::string target = "/v1/things") {
    RequestHead head;
    head.method = "POST";
    head.target = std::move(target);
    head.headers = std::move(headers);
    return head;
}

AuthSpec api_key_spec(std::string header = "x-api-key") {
    AuthSpec spec;
    spec.type = AuthType::api_key;
    spec.header = std::move(header);
    spec.key = "K";
    return spec;
}

AuthSpec query_spec(std::string param = "api_key") {
    AuthSpec spec;
    spec.type = AuthType::query;
    spec.param = std::move(param);
    spec.key = "K";
    return spec;
}

// Every header whose name folds to `name` (case, '_' vs '-').
std::vector<Header> copies_of(const RequestHead& head, std::string name) {
    auto fold = [](std::string s) {
        for (auto& c : s) {
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
            if (c == '_') c = '-';
        }
        return s;
    };
    std::vector<Header> out;
    for (const auto& h : head.headers)
        if (fold(h.name) == fold(name)) out.push_back(h);
    return out;
}

const Secret secret("sk-real-123");

TEST(InjectTest, ApiKeySetsTheRawSecret) {
    auto head = make_head({{"Host", "api.example.com"}, {"x-api-key", "placeholder"}});
    inject_credential(head, api_key_spec(), secret);
    auto copies = copies_of(head, "x-api-key");
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_EQ(copies[0].value, "sk-real-123");
}

TEST(InjectTest, ApiKeyDefaultsToXApiKeyWhenHeaderIsEmpty) {
    auto head = make_head({{"Host", "a"}});
    inject_credential(head, api_key_spec(""), secret);
    ASSERT_EQ(head.count("x-api-key"), 1u);
    EXPECT_EQ(*head.get("x-api-key"), "sk-real-123");
    EXPECT_EQ(api_key_spec("").target_header(), "x-api-key");
}

TEST(InjectTest, ApiKeyAddsTheHeaderWhenAbsent) {
    auto head = make_head({{"Host", "a"}, {"Accept", "*/*"}});
    inject_credential(head, api_key_spec(), secret);
    ASSERT_EQ(head.headers.size(), 3u);
    EXPECT_EQ(head.headers[2].name, "x-api-key");
    EXPECT_EQ(head.headers[2].value, "sk-real-123");
}

TEST(InjectTest, EveryLetterCaseVariantAndDuplicateIsReplacedByOne) {
    auto head = make_head({{"Host", "a"},
                           {"X-API-KEY", "p1"},
                           {"Accept", "*/*"},
                           {"x-Api-Key", "p2"},
                           {"x-api-key", "p3"},
                           {"X-Api-Key", "p4"}});
    inject_credential(head, api_key_spec(), secret);
    auto copies = copies_of(head, "x-api-key");
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_EQ(copies[0].name, "x-api-key");
    EXPECT_EQ(copies[0].value, "sk-real-123");
    ASSERT_EQ(head.headers.size(), 3u);
}

TEST(InjectTest, UnderscoreVariantsAreRemoved) {
    auto head = make_head({{"X_Api_Key", "p1"}, {"x_api-key", "p2"}, {"Host", "a"}, {"X-API_KEY", "p3"}});
    inject_credential(head, api_key_spec(), secret);
    ASSERT_EQ(head.headers.size(), 2u);
    EXPECT_EQ(head.headers[0].name, "Host");
    EXPECT_EQ(head.headers[1].name, "x-api-key");
    EXPECT_EQ(head.headers[1].value, "sk-real-123");
}

TEST(InjectTest, UnderscoreInTheConfiguredNameMatchesDashesToo) {
    auto spec = api_key_spec("X_Token");
    auto head = make_head({{"x-token", "p1"}, {"X_TOKEN", "p2"}});
    inject_credential(head, spec, secret);
    ASSERT_EQ(head.headers.size(), 1u);
    EXPECT_EQ(head.headers[0].name, "X_Token");
}

TEST(InjectTest, SimilarButDifferentNamesAreKept) {
    auto head = make_head({{"x-api-keys", "a"}, {"x-api-ke", "b"}, {"xapikey", "c"}, {"x-api-key", "p"}});
    inject_credential(head, api_key_spec(), secret);
    ASSERT_EQ(head.headers.size(), 4u);
    EXPECT_EQ(head.headers[0].value, "a");
    EXPECT_EQ(head.headers[1].value, "b");
    EXPECT_EQ(head.headers[2].value, "c");
}

TEST(InjectTest, OtherHeadersKeepTheirOrderAndValues) {
    std::vector<Header> others = {{"Host", "api.example.com"},
                                  {"Content-Type", "application/json"},
                                  {"X-Request-Id", "42"},
                                  {"Authorization", "Bearer placeholder"}};
    auto head = make_head(others);
    head.headers.insert(head.headers.begin() + 2, Header{"X-Api-Key", "placeholder"});
    inject_credential(head, api_key_spec(), secret);
    ASSERT_EQ(head.headers.size(), others.size() + 1);
    for (std::size_t i = 0; i < others.size(); ++i) {
        EXPECT_EQ(head.headers[i].name, others[i].name);
        EXPECT_EQ(head.headers[i].value, others[i].value);
    }
    EXPECT_EQ(head.method, "POST");
    EXPECT_EQ(head.target, "/v1/things");
}

TEST(InjectTest, BearerReplacesAuthorization) {
    AuthSpec spec;
    spec.type = AuthType::bearer;
    auto head = make_head({{"authorization", "Bearer fake"}, {"AUTHORIZATION", "Basic xx"}, {"Host", "a"}});
    inject_credential(head, spec, secret);
    auto copies = copies_of(head, "Authorization");
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_EQ(copies[0].name, "Authorization");
    EXPECT_EQ(copies[0].value, "Bearer sk-real-123");
    EXPECT_EQ(spec.target_header(), "Authorization");
}

TEST(InjectTest, BasicEncodesUserAndSecret) {
    AuthSpec spec;
    spec.type = AuthType::basic;
    spec.user = "bot";
    auto head = make_head({{"Authorization", "Basic cGxhY2Vob2xkZXI="}});
    inject_credential(head, spec, Secret("open sesame"));
    ASSERT_EQ(head.count("authorization"), 1u);
    // base64("bot:open sesame")
    EXPECT_EQ(*head.get("Authorization"), "Basic Ym90Om9wZW4gc2VzYW1l");
}

TEST(InjectTest, BasicPaddingForEveryRemainder) {
    AuthSpec spec;
    spec.type = AuthType::basic;
    spec.user = "u";
    EXPECT_EQ(injected_value(spec, Secret("p")).reveal(), "Basic dTpw");        // "u:p"
    EXPECT_EQ(injected_value(spec, Secret("pw")).reveal(), "Basic dTpwdw==");   // "u:pw"
    EXPECT_EQ(injected_value(spec, Secret("pwd")).reveal(), "Basic dTpwd2Q=");  // "u:pwd"
}

TEST(InjectTest, BasicUserWithColonIsRefused) {
    AuthSpec spec;
    spec.type = AuthType::basic;
    spec.user = "a:b";
    auto head = make_head({{"Authorization", "Basic x"}});
    EXPECT_THROW(inject_credential(head, spec, secret), std::invalid_argument);
    EXPECT_EQ(*head.get("Authorization"), "Basic x");
}

TEST(InjectTest, HeaderTemplateReplacesTheMarker) {
    AuthSpec spec;
    spec.type = AuthType::header;
    spec.header = "X-Token";
    spec.value_template = "Token {secret}";
    auto head = make_head({{"x-token", "Token placeholder"}, {"X_TOKEN", "y"}, {"Host", "a"}});
    inject_credential(head, spec, secret);
    ASSERT_EQ(copies_of(head, "X-Token").size(), 1u);
    EXPECT_EQ(*head.get("X-Token"), "Token sk-real-123");
    EXPECT_EQ(spec.target_header(), "X-Token");
}

TEST(InjectTest, HeaderTemplateWithSeveralMarkersAndNone) {
    AuthSpec spec;
    spec.type = AuthType::header;
    spec.header = "X-Token";
    spec.value_template = "{secret}/{secret}";
    EXPECT_EQ(injected_value(spec, Secret("s")).reveal(), "s/s");
    spec.value_template = "fixed";
    EXPECT_EQ(injected_value(spec, Secret("s")).reveal(), "fixed");
    spec.value_template = "";
    EXPECT_EQ(injected_value(spec, Secret("s")).reveal(), "s");
}

TEST(InjectTest, InjectedValueMatchesWhatIsSet) {
    AuthSpec spec;
    spec.type = AuthType::bearer;
    EXPECT_EQ(injected_value(spec, secret).reveal(), "Bearer sk-real-123");
    EXPECT_EQ(injected_value(api_key_spec(), secret).reveal(), "sk-real-123");
}

TEST(InjectTest, SecretWithLineBreakIsRefusedAndHeadUnchanged) {
    auto head = make_head({{"Host", "a"}, {"x-api-key", "p"}});
    auto before = head.headers;
    EXPECT_THROW(inject_credential(head, api_key_spec(), Secret("abc\r\nX-Evil: 1")), std::invalid_argument);
    EXPECT_THROW(inject_credential(head, api_key_spec(), Secret(std::string("a\0b", 3))), std::invalid_argument);
    ASSERT_EQ(head.headers.size(), before.size());
    for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(head.headers[i].value, before[i].value);

    AuthSpec spec;
    spec.type = AuthType::header;
    spec.header = "X-Token";
    spec.value_template = "Token {secret}\n";
    EXPECT_THROW(inject_credential(head, spec, secret), std::invalid_argument);
    EXPECT_EQ(head.headers.size(), before.size());
}

TEST(InjectTest, BadHeaderNameIsRefused) {
    auto head = make_head({{"Host", "a"}});
    EXPECT_THROW(inject_credential(head, api_key_spec("X Token"), secret), std::invalid_argument);
    AuthSpec spec;
    spec.type = AuthType::header;
    spec.header = "";
    EXPECT_THROW(inject_credential(head, spec, secret), std::invalid_argument);
    spec.header = "X-Token:";
    EXPECT_THROW(inject_credential(head, spec, secret), std::invalid_argument);
    EXPECT_EQ(head.headers.size(), 1u);
}

TEST(InjectTest, QueryAddsTheParameter) {
    auto head = make_head({{"Host", "a"}}, "/v1/things");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/v1/things?api_key=sk-real-123");

    head = make_head({{"Host", "a"}}, "/v1/things?a=1&b");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/v1/things?a=1&b&api_key=sk-real-123");

    head = make_head({{"Host", "a"}}, "/v1/things?");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/v1/things?api_key=sk-real-123");
}

TEST(InjectTest, QueryReplacesInPlace) {
    auto head = make_head({{"Host", "a"}}, "/path?a=1&api_key=x&b");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/path?a=1&api_key=sk-real-123&b");
}

TEST(InjectTest, QueryCollapsesEveryOccurrenceAtTheFirst) {
    auto head = make_head({{"Host", "a"}}, "/p?api_key=1&a=2&api_key&api_key=3&c=4&api%5Fkey=5&api_key=");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/p?api_key=sk-real-123&a=2&c=4");
}

TEST(InjectTest, QueryKeepsSimilarNamesAndEmptyPieces) {
    auto head = make_head({{"Host", "a"}}, "/p?api_keys=1&&x_api_key=2&api_key=3&API_KEY=4");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/p?api_keys=1&&x_api_key=2&api_key=sk-real-123&API_KEY=4");
}

TEST(InjectTest, QueryUrlEncodesTheSecret) {
    auto head = make_head({{"Host", "a"}}, "/p?q=1");
    inject_credential(head, query_spec(), Secret("a b+c/d=e&f~g-h.i_j%\xff"));
    EXPECT_EQ(head.target, "/p?q=1&api_key=a%20b%2Bc%2Fd%3De%26f~g-h.i_j%25%FF");
    EXPECT_EQ(injected_value(query_spec(), Secret("a&b")).reveal(), "a%26b");
}

TEST(InjectTest, QueryDropsTheFragment) {
    auto head = make_head({{"Host", "a"}}, "/p?a=1#frag?api_key=z");
    inject_credential(head, query_spec(), secret);
    EXPECT_EQ(head.target, "/p?a=1&api_key=sk-real-123");
}

TEST(InjectTest, QueryLeavesHeadersAlone) {
    auto head = make_head({{"Host", "a"}, {"x-api-key", "p"}, {"Authorization", "q"}}, "/p");
    auto before = head.headers;
    inject_credential(head, query_spec(), secret);
    ASSERT_EQ(head.headers.size(), before.size());
    for (std::size_t i = 0; i < before.size(); ++i) {
        EXPECT_EQ(head.headers[i].name, before[i].name);
        EXPECT_EQ(head.headers[i].value, before[i].value);
    }
    EXPECT_EQ(query_spec().target_header(), "");
}

TEST(InjectTest, QueryNeedsAParameterName) {
    auto head = make_head({{"Host", "a"}}, "/p");
    EXPECT_THROW(inject_credential(head, query_spec(""), secret), std::invalid_argument);
}

TEST(InjectTest, InjectingTwiceStillLeavesOneCopy) {
    auto head = make_head({{"x-api-key", "p"}});
    inject_credential(head, api_key_spec(), Secret("first"));
    inject_credential(head, api_key_spec(), Secret("second"));
    ASSERT_EQ(head.headers.size(), 1u);
    EXPECT_EQ(head.headers[0].value, "second");

    head = make_head({}, "/p?api_key=x");
    inject_credential(head, query_spec(), Secret("first"));
    inject_credential(head, query_spec(), Secret("second"));
    EXPECT_EQ(head.target, "/p?api_key=second");
}

}  // namespace
}  // namespace vaultgate
