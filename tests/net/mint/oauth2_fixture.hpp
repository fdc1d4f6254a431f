#pragma once
// The proxy in-process with an oauth2-client-credentials service for
// oauth.test, whose token endpoint is a real TLS server on 127.0.0.1
// (auth.test, answering /scripted as each test sets it) and whose origin
// records what reaches it.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace vaultgate::test {

inline constexpr const char* oauth_client_id = "vg-client-id";
// '/', '+' and '=' are escaped by the form encoding of the basic header.
inline constexpr const char* oauth_client_secret = "cs-Secret/VALUE+42=";
inline constexpr const char* minted_token = "tok-MINTED-0123456789abcdefXYZ";

// A token endpoint's answer: `status` with a JSON (or any) body.
inline std::string http_answer(int status, const std::string& body, const std::string& type = "application/json") {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline std::string token_answer(const std::string& token, int expires_in = 3600) {
    return http_answer(200, R"({"access_token":")" + token + R"(","token_type":"Bearer","expires_in":)" +
                                std::to_string(expires_in) + "}");
}

class OAuth2Fixture : public ::testing::Test {
protected:
    OAuth2Fixture()
        : pki_(dir_),
          endpoint_files_(pki_.server_files(dir_, "auth.test")),
          origin_files_(pki_.server_files(dir_, "oauth.test")),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          endpoint_(endpoint_files_.first, endpoint_files_.second),
          origin_(origin_files_.first, origin_files_.second),
          bound_(bound_files_.first, bound_files_.second) {}

    // Starts the proxy; `auth_extra` ends the service's auth object.
    void start(const std::string& auth_extra = "client_auth: basic", bool redact = false,
               const std::string& limits = "") {
        const std::string service =
            "      - host: oauth.test\n        port: " + std::to_string(origin_.port()) +
            "\n        auth: { type: oauth2-client-credentials, token_url: \"https://auth.test:" +
            std::to_string(endpoint_.port()) + "/scripted\", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, " +
            auth_extra + " }\n" + (redact ? "        redact_response: true\n" : "");
        auto yaml = base_config(dir_, pki_, bound_.port(), bound_.port(), service);
        const std::string bench_key_line = "      BENCH_KEY: { file: " + dir_.file("secret.txt") + " }\n";
        yaml.insert(yaml.find(bench_key_line) + bench_key_line.size(),
                    "      CLIENT_ID: { file: " + dir_.write("id.txt", std::string(oauth_client_id) + "\n") +
                        " }\n      CLIENT_SECRET: { file: " +
                        dir_.write("cs.txt", std::string(oauth_client_secret) + "\n") + " }\n");
        yaml.replace(yaml.find("    rogue.test: 127.0.0.1\n"), 0,
                     "    auth.test: 127.0.0.1\n    oauth.test: 127.0.0.1\n");
        yaml.replace(yaml.find("limits:\n") + 8, 0, limits);
        proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    }

    std::unique_ptr<RawClient> open() {
        auto c = std::make_unique<RawClient>(proxy_->port());
        auto head = c->connect("oauth.test:" + std::to_string(origin_.port()));
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "oauth.test"));
        return c;
    }

    // The client's request, with a placeholder where the token goes.
    std::string request(const std::string& path = "/echo") const {
        return "GET " + path + " HTTP/1.1\r\nHost: oauth.test:" + std::to_string(origin_.port()) +
               "\r\nAuthorization: Bearer placeholder\r\n\r\n";
    }

    // One request on a connection of its own.
    RawClient::Response get(const std::string& path = "/echo") {
        auto c = open();
        c->write(request(path));
        auto r = c->read_response();
        EXPECT_TRUE(r);
        return r ? *r : RawClient::Response{};
    }

    std::uint64_t tokens(TokenEvent event) {
        return proxy_->server().metrics().token_events("bench", "bench/1", event);
    }

    // Every byte the proxy wrote to the access log, the proxy stopped first.
    std::string final_log() { return stop_and_read_access_log(proxy_); }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> endpoint_files_, origin_files_, bound_files_;
    RecordingUpstream endpoint_, origin_;
    RecordingUpstream bound_;  // api.bound.test, an api-key service
    std::unique_ptr<ProxyUnderTest> proxy_;
};

}  // namespace vaultgate::test
