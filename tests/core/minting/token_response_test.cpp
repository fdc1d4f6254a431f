#include "vaultgate/minting/token_response.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace vaultgate::minting {
namespace {

using namespace std::chrono_literals;
using std::chrono::system_clock;

const auto now = system_clock::time_point(1700000000s);  // 2023-11-14T22:13:20Z

// Every token in these tests holds "SECRET", and no failure's reason may.
std::string failure_of(const TokenResult& result) {
    if (!std::holds_alternative<TokenFailure>(result)) {
        ADD_FAILURE() << "a token where a failure was expected";
        return {};
    }
    const std::string reason = std::get<TokenFailure>(result).reason;
    EXPECT_EQ(reason.find("SECRET"), std::string::npos) << reason;
    EXPECT_FALSE(reason.empty());
    return reason;
}

const MintedToken& token_of(const TokenResult& result) {
    if (const auto* failure = std::get_if<TokenFailure>(&result)) ADD_FAILURE() << failure->reason;
    static const MintedToken none;
    return std::holds_alternative<MintedToken>(result) ? std::get<MintedToken>(result) : none;
}

TokenResult oauth(int status, const nlohmann::json& body) {
    return parse_oauth_token_response(status, Secret(body.dump()), now);
}

nlohmann::json oauth_answer(const nlohmann::json& expires_in) {
    nlohmann::json body{{"access_token", "at-SECRET-1"}, {"token_type", "Bearer"}};
    if (!expires_in.is_discarded()) body["expires_in"] = expires_in;
    return body;
}

TEST(OAuthTokenResponseTest, RefreshesAMinuteOrATenthOfTheLifetimeEarly) {
    const std::pair<nlohmann::json, system_clock::duration> cases[] = {
        {3600, 3540s},                  // a minute early
        {600, 540s},                    // a tenth is exactly a minute
        {30, 27s},                      // a tenth of a short life
        {1, 900ms},                     //
        {"3600", 3540s},                // some endpoints send a string
        {3600.9, 3540s},                // fractions dropped
        {nullptr, 300s},                // null as missing: five minutes
        {1000000000000, 86400s - 60s},  // capped at a day
        {"99999999999999999999999", 86400s - 60s},
    };
    for (const auto& [expires_in, refresh_after] : cases) {
        const auto result = oauth(200, oauth_answer(expires_in));
        EXPECT_EQ(token_of(result).token.reveal(), "at-SECRET-1") << expires_in;
        EXPECT_EQ(token_of(result).refresh_at, now + refresh_after) << expires_in;
    }
    EXPECT_EQ(token_of(oauth(200, oauth_answer(nlohmann::json::value_t::discarded))).refresh_at, now + 5min);
}

TEST(OAuthTokenResponseTest, AnExpiresInThatIsNotAPositiveNumberOfSecondsIsAFailure) {
    for (const nlohmann::json& expires_in :
         {nlohmann::json(0), nlohmann::json(-5), nlohmann::json(0.5), nlohmann::json(-1e300), nlohmann::json("0"),
          nlohmann::json("-5"), nlohmann::json("3600s"), nlohmann::json(""), nlohmann::json(true),
          nlohmann::json::array({3600}), nlohmann::json::object()})
        EXPECT_EQ(failure_of(oauth(200, oauth_answer(expires_in))),
                  "the answer's expires_in is not a positive number of seconds")
            << expires_in;
}

TEST(OAuthTokenResponseTest, AnyStatusButTwoHundredIsAFailureWhateverTheBodyHolds) {
    for (const int status : {201, 204, 301, 400, 401, 403, 429, 500, 503})
        EXPECT_EQ(failure_of(oauth(status, oauth_answer(3600))), "token endpoint answered " + std::to_string(status));
    EXPECT_EQ(failure_of(parse_oauth_token_response(401, Secret("SECRET not json"), now)),
              "token endpoint answered 401");
}

TEST(OAuthTokenResponseTest, AnAnswerWithoutAUsableAccessTokenIsAFailure) {
    EXPECT_EQ(failure_of(parse_oauth_token_response(200, Secret("access_token=SECRET"), now)),
              "the token endpoint's answer is not JSON");
    EXPECT_EQ(failure_of(parse_oauth_token_response(200, Secret(""), now)), "the token endpoint's answer is not JSON");
    EXPECT_EQ(failure_of(parse_oauth_token_response(200, Secret("{\"access_token\":\"SECRET"), now)),
              "the token endpoint's answer is not JSON");
    EXPECT_EQ(failure_of(oauth(200, nlohmann::json::array({"SECRET"}))),
              "the token endpoint's answer is not a JSON object");
    EXPECT_EQ(failure_of(oauth(200, {{"token", "SECRET"}, {"expires_in", 60}})),
              "no access_token in the token endpoint's answer");
    EXPECT_EQ(failure_of(oauth(200, {{"access_token", 12345}})), "no access_token in the token endpoint's answer");
    EXPECT_EQ(failure_of(oauth(200, {{"error", "invalid_client"}, {"error_description", "SECRET"}})),
              "no access_token in the token endpoint's answer");
}

TEST(OAuthTokenResponseTest, ATokenAHeaderCannotCarryAsItIsIsAFailure) {
    const std::string too_long = "SECRET" + std::string(16384 - 5, 'x');
    for (const std::string& token : {std::string(""), std::string("SECRET\r\nX-Injected: 1"), std::string("SECRET\n"),
                                     std::string("SECRET and more"), std::string("SECRET\x7f"),
                                     std::string("SECRET\xc3\xa9"), std::string("SECRET\t"), too_long}) {
        EXPECT_EQ(failure_of(oauth(200, {{"access_token", token}})),
                  "the access_token in the answer is empty, too long or holds bytes a header cannot carry");
    }
    // A NUL inside the JSON string (\u0000) reaches the token too.
    EXPECT_EQ(failure_of(parse_oauth_token_response(200, Secret(R"({"access_token":"SECRET\u0000x"})"), now)),
              "the access_token in the answer is empty, too long or holds bytes a header cannot carry");
    const std::string longest = "SECRET" + std::string(16384 - 6, 'x');
    EXPECT_EQ(token_of(oauth(200, {{"access_token", longest}})).token.size(), 16384u);
    EXPECT_TRUE(is_usable_token("ya29.a0Af-_~+/="));
}

TEST(OAuthTokenResponseTest, OnlyTheBearerTokenTypeInAnyCase) {
    for (const char* type : {"Bearer", "bearer", "BEARER"})
        EXPECT_EQ(token_of(oauth(200, {{"access_token", "SECRET"}, {"token_type", type}})).token.reveal(), "SECRET");
    for (const nlohmann::json& type : {nlohmann::json("mac"), nlohmann::json("DPoP"), nlohmann::json("N_A"),
                                       nlohmann::json("bearer "), nlohmann::json(1), nlohmann::json(nullptr)})
        EXPECT_EQ(failure_of(oauth(200, {{"access_token", "SECRET"}, {"token_type", type}})),
                  "the answer's token_type is not bearer")
            << type;
}

TokenResult github(int status, const nlohmann::json& body) {
    return parse_github_token_response(status, Secret(body.dump()), now);
}

nlohmann::json github_answer(const nlohmann::json& expires_at) {
    return {{"token", "ghs_SECRET"}, {"expires_at", expires_at}, {"permissions", {{"contents", "read"}}}};
}

TEST(GithubTokenResponseTest, RefreshesFiveMinutesBeforeExpiresAt) {
    const auto hour = github(201, github_answer("2023-11-14T23:13:20Z"));  // now + 1 h
    EXPECT_EQ(token_of(hour).token.reveal(), "ghs_SECRET");
    EXPECT_EQ(token_of(hour).refresh_at, now + 55min);
    EXPECT_EQ(token_of(github(201, github_answer("2023-11-14T22:18:21Z"))).refresh_at, now + 1s);
    // Across a leap day and a year's end (2024-02-29T00:00Z and 2024-01-01T00:00Z).
    const auto leap = parse_github_token_response(201, Secret(github_answer("2024-02-29T00:05:00Z").dump()),
                                                  system_clock::time_point(1709164800s - 1h));
    EXPECT_EQ(token_of(leap).refresh_at, system_clock::time_point(1709164800s));
    const auto new_year = parse_github_token_response(201, Secret(github_answer("2024-01-01T00:05:00Z").dump()),
                                                      system_clock::time_point(1704067200s - 1h));
    EXPECT_EQ(token_of(new_year).refresh_at, system_clock::time_point(1704067200s));
    // Later than a day from now: cached for a day.
    EXPECT_EQ(token_of(github(201, github_answer("2023-11-20T00:00:00Z"))).refresh_at, now + 24h);
}

TEST(GithubTokenResponseTest, AnExpiresAtWithinFiveMinutesIsAFailure) {
    for (const char* at :
         {"2023-11-14T22:18:20Z", "2023-11-14T22:17:20Z", "2023-11-14T22:13:20Z", "2020-01-01T00:00:00Z"})
        EXPECT_EQ(failure_of(github(201, github_answer(at))), "the token expires within 5 minutes") << at;
}

TEST(GithubTokenResponseTest, AMalformedExpiresAtIsAFailure) {
    for (const nlohmann::json& at :
         {nlohmann::json("2023-11-14 23:13:20Z"), nlohmann::json("2023-11-14T23:13:20+00:00"),
          nlohmann::json("2023-11-14T23:13:20.123Z"), nlohmann::json("2023-11-14T23:13:20"),
          nlohmann::json("2023-13-14T23:13:20Z"), nlohmann::json("2023-02-29T23:13:20Z"),
          nlohmann::json("2023-11-14T24:00:00Z"), nlohmann::json("2023-11-14T23:60:00Z"),
          nlohmann::json("2023-11-14T23:13:60Z"), nlohmann::json("2023-11-1xT23:13:20Z"), nlohmann::json("")})
        EXPECT_EQ(failure_of(github(201, github_answer(at))),
                  "the answer's expires_at is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)")
            << at;
    EXPECT_EQ(failure_of(github(201, github_answer(1700003600))), "no expires_at in the token endpoint's answer");
    EXPECT_EQ(failure_of(github(201, {{"token", "ghs_SECRET"}})), "no expires_at in the token endpoint's answer");
}

TEST(GithubTokenResponseTest, AnyStatusButTwoHundredOneIsAFailureWhateverTheBodyHolds) {
    for (const int status : {200, 202, 401, 403, 404, 422, 500})
        EXPECT_EQ(failure_of(github(status, github_answer("2023-11-14T23:13:20Z"))),
                  "token endpoint answered " + std::to_string(status));
}

TEST(GithubTokenResponseTest, AnAnswerWithoutAUsableTokenIsAFailure) {
    EXPECT_EQ(failure_of(parse_github_token_response(201, Secret("<html>SECRET"), now)),
              "the token endpoint's answer is not JSON");
    EXPECT_EQ(failure_of(github(201, {{"expires_at", "2023-11-14T23:13:20Z"}, {"message", "SECRET"}})),
              "no token in the token endpoint's answer");
    EXPECT_EQ(failure_of(github(201, {{"token", "ghs_SECRET\r\n"}, {"expires_at", "2023-11-14T23:13:20Z"}})),
              "the token in the answer is empty, too long or holds bytes a header cannot carry");
}

}  // namespace
}  // namespace vaultgate::minting
