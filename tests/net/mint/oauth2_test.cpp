// oauth2-client-credentials through the proxy: the token endpoint is asked
// once per expiry (single flight across worker threads), the origin sees the
// minted token, the client never does, and every way the endpoint can fail
// ends in 502 credential_unavailable with nothing of its answer passed on.
#include "oauth2_fixture.hpp"

#include <vector>

namespace vaultgate::test {
namespace {

using OAuth2Test = OAuth2Fixture;

std::string basic(const std::string& pair) { return "Basic " + base64_encode(pair, Base64Alphabet::standard, true); }

TEST_F(OAuth2Test, TheOriginSeesTheMintedTokenAndTheClientNever) {
    endpoint_.script_response(token_answer(minted_token));
    start("scope: \"read write\", audience: \"https://api.oauth.test\", client_auth: basic");

    auto r = get();
    EXPECT_EQ(r.status, 200) << r.head << r.body;
    EXPECT_EQ((r.head + r.body).find(minted_token), std::string::npos);
    auto seen = origin_.requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].header_values("authorization"), std::vector<std::string>{std::string("Bearer ") + minted_token});

    // RFC 6749 2.3.1: id and secret form-encoded inside the basic header.
    auto fetches = endpoint_.requests();
    ASSERT_EQ(fetches.size(), 1u);
    EXPECT_EQ(fetches[0].method, "POST");
    EXPECT_EQ(fetches[0].target, "/scripted");
    EXPECT_EQ(fetches[0].header_values("authorization"),
              std::vector<std::string>{basic("vg-client-id:cs-Secret%2FVALUE%2B42%3D")});
    EXPECT_EQ(fetches[0].header_values("content-type"), std::vector<std::string>{"application/x-www-form-urlencoded"});
    const std::string& form = fetches[0].body;
    EXPECT_NE(form.find("grant_type=client_credentials"), std::string::npos) << form;
    EXPECT_NE(form.find("scope=read+write"), std::string::npos) << form;
    EXPECT_NE(form.find("audience=https%3A%2F%2Fapi.oauth.test"), std::string::npos) << form;
    EXPECT_EQ(form.find("client_secret"), std::string::npos) << form;

    EXPECT_TRUE(proxy_->wait_for_log("\"credential\":\"oauth2-client-credentials\"")) << proxy_->access_log_text();
    const std::string log = final_log();
    EXPECT_EQ(log.find(minted_token), std::string::npos);
    EXPECT_EQ(log.find(oauth_client_secret), std::string::npos);
}

TEST_F(OAuth2Test, PostClientAuthSendsTheFormFieldsAndNoHeader) {
    endpoint_.script_response(token_answer(minted_token));
    start("client_auth: post");
    EXPECT_EQ(get().status, 200);
    auto fetches = endpoint_.requests();
    ASSERT_EQ(fetches.size(), 1u);
    EXPECT_TRUE(fetches[0].header_values("authorization").empty());
    const std::string& form = fetches[0].body;
    EXPECT_NE(form.find("client_id=vg-client-id"), std::string::npos) << form;
    EXPECT_NE(form.find("client_secret=cs-Secret%2FVALUE%2B42%3D"), std::string::npos) << form;
    EXPECT_EQ(form.find("scope="), std::string::npos) << form;  // not configured, not sent
    EXPECT_EQ(origin_.requests().at(0).header_values("authorization"),
              std::vector<std::string>{std::string("Bearer ") + minted_token});
}

TEST_F(OAuth2Test, LaterRequestsUseTheCachedToken) {
    endpoint_.script_response(token_answer(minted_token));
    start();
    auto c = open();
    for (int i = 0; i < 3; ++i) {
        c->write(request());
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(get().status, 200);
    EXPECT_EQ(endpoint_.requests().size(), 1u);
    EXPECT_EQ(origin_.requests().size(), 4u);
    EXPECT_EQ(tokens(TokenEvent::fetch), 1u);
    EXPECT_EQ(tokens(TokenEvent::cache_hit), 3u);
    EXPECT_EQ(tokens(TokenEvent::failure), 0u);
    const auto metrics = proxy_->server().metrics().render({});
    EXPECT_NE(metrics.find("vaultgate_token_fetches_total{vault=\"bench\",service=\"bench/1\"} 1"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("vaultgate_token_cache_hits_total{vault=\"bench\",service=\"bench/1\"} 3"),
              std::string::npos);
    EXPECT_EQ(metrics.find(minted_token), std::string::npos);
}

// The endpoint holds its answer until all 20 requests are waiting for it,
// spread over the proxy's worker threads: one fetch serves them all.
TEST_F(OAuth2Test, TwentyConcurrentFirstRequestsShareOneFetch) {
    endpoint_.script_response(token_answer(minted_token));
    endpoint_.hold_scripted();
    start();
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 20; ++i) clients.push_back(open());
    for (auto& c : clients) c->write(request());
    // The fetch is held at the endpoint; every other request waits for it.
    EXPECT_TRUE(eventually([&] { return tokens(TokenEvent::wait) == 19 && endpoint_.requests().size() == 1; }))
        << tokens(TokenEvent::wait) << " waiting";
    endpoint_.release_scripted();
    for (auto& c : clients) {
        auto r = c->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
    }
    EXPECT_EQ(endpoint_.requests().size(), 1u);
    EXPECT_EQ(tokens(TokenEvent::fetch), 1u);
    const auto seen = origin_.requests();
    ASSERT_EQ(seen.size(), 20u);
    for (const auto& req : seen)
        EXPECT_EQ(req.header_values("authorization"), std::vector<std::string>{std::string("Bearer ") + minted_token});
}

// A failure is refused with fixed text; nothing reaches the origin, and no
// byte of what the endpoint said reaches the client or the log.
class OAuth2FailureTest : public OAuth2Fixture {
protected:
    void expect_refused(const RawClient::Response& r, const std::string& reason) {
        EXPECT_EQ(r.status, 502) << r.head << r.body;
        EXPECT_NE(r.body.find("credential_unavailable"), std::string::npos) << r.body;
        EXPECT_EQ(r.body.find("leak"), std::string::npos) << r.body;
        EXPECT_TRUE(origin_.requests().empty());
        EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"" + reason + "\"")) << proxy_->access_log_text();
        EXPECT_EQ(tokens(TokenEvent::failure), 1u);
        const std::string log = final_log();
        EXPECT_EQ(log.find("leak"), std::string::npos) << log;
        EXPECT_EQ(log.find("credential\":"), std::string::npos) << log;  // nothing was applied
    }
};

TEST_F(OAuth2FailureTest, AServerErrorWithATokenInItsBodyIsAFailure) {
    endpoint_.script_response(http_answer(500, R"({"access_token":"leak-500-token","expires_in":3600})"));
    start();
    expect_refused(get(), "token_endpoint_status");
}

TEST_F(OAuth2FailureTest, AnUnauthorizedAnswerIsAFailure) {
    endpoint_.script_response(http_answer(401, R"({"error":"invalid_client","access_token":"leak-401"})"));
    start();
    expect_refused(get(), "token_endpoint_status");
}

TEST_F(OAuth2FailureTest, AnOkWithoutAccessTokenIsAFailure) {
    endpoint_.script_response(http_answer(200, R"({"token_type":"Bearer","note":"leak","expires_in":3600})"));
    start();
    expect_refused(get(), "token_missing");
}

TEST_F(OAuth2FailureTest, AnEndpointThatNeverAnswersTimesOut) {
    endpoint_.script_response(token_answer("leak-too-late"));
    endpoint_.hold_scripted();
    start("client_auth: basic", false, "  response_timeout: 1s\n");
    const auto started = std::chrono::steady_clock::now();
    auto r = get();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(8));
    expect_refused(r, "token_endpoint_timeout");
}

TEST_F(OAuth2FailureTest, AnOversizedAnswerIsAFailure) {
    std::string body = R"({"access_token":"leak-big","pad":")" + std::string((1 << 20) + 1, 'x') + "\"}";
    endpoint_.script_response(http_answer(200, body));
    start();
    expect_refused(get(), "token_endpoint_too_large");
}

// Right after a failure, requests are refused without a fetch; once the
// window (1 s) has passed, the next request fetches again.
TEST_F(OAuth2Test, AfterAFailureTheServiceBacksOff) {
    endpoint_.script_response(http_answer(503, "{}"));
    start();
    EXPECT_EQ(get().status, 502);
    EXPECT_EQ(get().status, 502);
    EXPECT_EQ(endpoint_.requests().size(), 1u);
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"token_backoff\"")) << proxy_->access_log_text();

    endpoint_.script_response(token_answer(minted_token));
    EXPECT_TRUE(eventually([&] { return get().status == 200; }));
    EXPECT_EQ(endpoint_.requests().size(), 2u);
    EXPECT_EQ(tokens(TokenEvent::failure), 1u);
    EXPECT_EQ(tokens(TokenEvent::fetch), 2u);
}

TEST_F(OAuth2Test, RedactResponseScrubsTheMintedToken) {
    endpoint_.script_response(token_answer(minted_token));
    const std::string reflected = std::string("{\"seen\":\"") + minted_token + "\"}";
    origin_.script_response("HTTP/1.1 200 OK\r\nX-Echo: " + std::string(minted_token) +
                            "\r\nContent-Length: " + std::to_string(reflected.size()) + "\r\n\r\n" + reflected);
    start("client_auth: basic", /*redact=*/true);
    auto r = get("/scripted");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ((r.head + r.body).find(minted_token), std::string::npos) << r.head << r.body;
    EXPECT_NE(r.body.find("vaultgate-placeholder-CLIENT_SECRET"), std::string::npos) << r.body;
    EXPECT_EQ(origin_.requests().at(0).header_values("authorization"),
              std::vector<std::string>{std::string("Bearer ") + minted_token});
}

TEST_F(OAuth2Test, TheCredentialFieldNamesEveryInjectedType) {
    endpoint_.script_response(token_answer(minted_token));
    start();
    auto c = std::make_unique<RawClient>(proxy_->port());
    ASSERT_EQ(c->connect("api.bound.test:" + std::to_string(bound_.port())).rfind("HTTP/1.1 200", 0), 0u);
    ASSERT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test"));
    c->write("GET /echo HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(proxy_->wait_for_log("\"service\":\"bench/0\",\"credential\":\"api-key\""))
        << proxy_->access_log_text();
    // Outside the bound service's host nothing is applied, and the field is absent.
    EXPECT_EQ(proxy_->access_log_text().find("\"credential\":\"oauth2"), std::string::npos);
}

}  // namespace
}  // namespace vaultgate::test
