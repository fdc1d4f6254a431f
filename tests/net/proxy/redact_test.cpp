// redact_response: an origin that reflects the injected key (raw, base64,
// URL-encoded, hex; in the body cut at every offset, in Location and
// Set-Cookie, in 1xx heads, the reason phrase and header names) never gets it
// to the client; a compressed answer, or one whose coding is ambiguous, is refused.
#include "harness.hpp"

#include <gtest/gtest.h>

namespace vaultgate::test {
namespace {

class RedactTest : public ::testing::Test {
protected:
    RedactTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          redact_files_(pki_.server_files(dir_, "redact.test")),
          bound_(bound_files_.first, bound_files_.second),
          redacting_(redact_files_.first, redact_files_.second) {
        const std::string port = std::to_string(redacting_.port());
        // Under /short the credential is "place": it occurs in its own placeholder
        // ("vaultgate-placeholder-SHORT"), so its responses cannot be redacted.
        auto yaml = base_config(
            dir_, pki_, bound_.port(), bound_.port(),
            "      - host: redact.test\n        port: " + port +
                "\n        path_prefix: /short\n        auth: { type: api-key, key: SHORT }"
                "\n        redact_response: true\n"
                "      - host: redact.test\n        port: " +
                port + "\n        auth: { type: api-key, key: BENCH_KEY }\n        redact_response: true\n");
        const std::string bench_key_line = "      BENCH_KEY: { file: " + dir_.file("secret.txt") + " }\n";
        const auto at = yaml.find(bench_key_line);
        if (at != std::string::npos)
            yaml.insert(at + bench_key_line.size(),
                        "      SHORT: { file: " + dir_.write("short.txt", "place\n") + " }\n");
        yaml.replace(yaml.find("    rogue.test: 127.0.0.1\n"), 0, "    redact.test: 127.0.0.1\n");
        proxy_ = std::make_unique<ProxyUnderTest>(yaml);
    }

    // The upstream reflects the secret on purpose here: it must still never
    // reach an access-log line.
    void TearDown() override { EXPECT_EQ(stop_and_read_access_log(proxy_).find(test_secret), std::string::npos); }

    // Answers one request for /scripted with `raw` and returns every byte of
    // every response the client read (1xx heads too), up to the final one.
    std::string scripted_exchange(const std::string& raw, int& final_status) {
        redacting_.script_response(raw);
        auto c = open("redact.test", redacting_.port());
        c->write("GET /scripted HTTP/1.1\r\nHost: redact.test:" + std::to_string(redacting_.port()) + "\r\n\r\n");
        std::string seen;
        final_status = 0;
        for (int i = 0; i < 64 && final_status < 200; ++i) {
            auto r = c->read_response();
            if (!r) break;
            seen += r->head + r->body;
            if (r->status >= 200) final_status = r->status;
        }
        return seen;
    }

    std::unique_ptr<RawClient> open(const std::string& host, std::uint16_t port) {
        auto c = std::make_unique<RawClient>(proxy_->port());
        auto head = c->connect(host + ":" + std::to_string(port));
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, host));
        return c;
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_, redact_files_;
    RecordingUpstream bound_, redacting_;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

TEST_F(RedactTest, ReflectedSecretNeverReachesTheClientAtAnySplit) {
    auto c = open("redact.test", redacting_.port());
    const std::string host = "Host: redact.test:" + std::to_string(redacting_.port()) + "\r\n";
    // The reflected body is about 160 bytes; cut it at every offset.
    for (int split = 1; split <= 170; ++split) {
        c->write("GET /reflect?split=" + std::to_string(split) + " HTTP/1.1\r\n" + host +
                 "Accept-Encoding: gzip\r\n\r\n");
        auto r = c->read_response();
        ASSERT_TRUE(r) << split;
        ASSERT_EQ(r->status, 200);
        EXPECT_EQ(r->head.find(test_secret), std::string::npos) << r->head;
        EXPECT_EQ((r->head + r->body).find("c2stcmVhbC9TRUNSRVQrOWY4ZT03ZDZjNWI0YQ"), std::string::npos)
            << "base64 form leaked at split " << split;
        EXPECT_EQ((r->head + r->body).find("sk-real%2FSECRET%2B9f8e%3D7d6c5b4a"), std::string::npos)
            << "url-encoded form leaked at split " << split;
        EXPECT_EQ(r->body.find(test_secret), std::string::npos) << "raw form leaked at split " << split;
        EXPECT_EQ(r->body.find("sk-real\\/SECRET+9f8e=7d6c5b4a"), std::string::npos)
            << "JSON-escaped form leaked at split " << split;
        EXPECT_NE(r->body.find("json=\"vaultgate-placeholder-BENCH_KEY\""), std::string::npos) << r->body;
        EXPECT_NE(r->body.find("raw=vaultgate-placeholder-BENCH_KEY"), std::string::npos) << r->body;
        EXPECT_NE(r->head.find("vaultgate-placeholder-BENCH_KEY"), std::string::npos) << r->head;
    }
    // The origin did get the real key, and no Accept-Encoding.
    auto reqs = redacting_.requests();
    ASSERT_FALSE(reqs.empty());
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(reqs[0].header_values("accept-encoding").empty());
}

TEST_F(RedactTest, ASecretThatOccursInItsPlaceholderIsRefusedNotSentUnredacted) {
    auto c = open("redact.test", redacting_.port());
    c->write("GET /short/reflect HTTP/1.1\r\nHost: redact.test:" + std::to_string(redacting_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    EXPECT_NE(r->body.find("redaction_unavailable"), std::string::npos) << r->body;
    EXPECT_TRUE(redacting_.requests().empty());  // nothing was sent to the origin
    EXPECT_TRUE(proxy_->wait_for_log("\"reason\":\"redaction_unavailable\""));
    // The connection is closed, and the proxy serves the next one.
    EXPECT_TRUE(c->closed_by_peer(5000));
    auto again = open("redact.test", redacting_.port());
    again->write("GET /echo HTTP/1.1\r\nHost: redact.test:" + std::to_string(redacting_.port()) + "\r\n\r\n");
    auto ok = again->read_response();
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
}

TEST_F(RedactTest, CompressedResponseToARedactedServiceIs502) {
    auto c = open("redact.test", redacting_.port());
    c->write("GET /gzip HTTP/1.1\r\nHost: redact.test:" + std::to_string(redacting_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 502);
    EXPECT_NE(r->body.find("compressed_response_refused"), std::string::npos);
    EXPECT_EQ(r->body.find("abcd"), std::string::npos);
}

// The test secret as hex, as a server dumps bytes it does not take for text.
const std::string secret_hex_lower = "736b2d7265616c2f5345435245542b396638653d3764366335623461";
const std::string secret_hex_upper = "736B2D7265616C2F5345435245542B396638653D3764366335623461";

void expect_no_secret(const std::string& seen) {
    EXPECT_EQ(seen.find(test_secret), std::string::npos) << seen;
    EXPECT_EQ(seen.find(secret_hex_lower), std::string::npos) << seen;
    EXPECT_EQ(seen.find(secret_hex_upper), std::string::npos) << seen;
}

TEST_F(RedactTest, HexFormsOfTheSecretInTheBodyAreRedacted) {
    const std::string body = "lower=" + secret_hex_lower + " upper=" + secret_hex_upper;
    int status = 0;
    auto seen = scripted_exchange(
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, status);
    EXPECT_EQ(status, 200);
    expect_no_secret(seen);
    EXPECT_NE(seen.find("lower=vaultgate-placeholder-BENCH_KEY upper=vaultgate-placeholder-BENCH_KEY"),
              std::string::npos)
        << seen;
}

TEST_F(RedactTest, SecretInAnEarlyHintsHeadIsRedacted) {
    int status = 0;
    auto seen = scripted_exchange(std::string("HTTP/1.1 103 Early Hints\r\nLink: <https://cdn.test/?k=") + test_secret +
                                      ">; rel=preload\r\nX-Hex: " + secret_hex_upper +
                                      "\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                                  status);
    EXPECT_EQ(status, 200);
    expect_no_secret(seen);
    // The hint itself still arrives, with the placeholder in it.
    EXPECT_NE(seen.find("HTTP/1.1 103 Early Hints"), std::string::npos) << seen;
    EXPECT_NE(seen.find("Link: <https://cdn.test/?k=vaultgate-placeholder-BENCH_KEY>"), std::string::npos) << seen;
}

TEST_F(RedactTest, SecretInTheReasonPhraseIsRedacted) {
    for (const std::string& form : {std::string(test_secret), secret_hex_lower}) {
        int status = 0;
        auto seen = scripted_exchange("HTTP/1.1 200 OK " + form + "\r\nContent-Length: 2\r\n\r\nok", status);
        EXPECT_EQ(status, 200);
        expect_no_secret(seen);
        EXPECT_NE(seen.find("HTTP/1.1 200 OK vaultgate-placeholder-BENCH_KEY\r\n"), std::string::npos) << seen;
    }
}

TEST_F(RedactTest, SecretInAHeaderNameIsRedacted) {
    int status = 0;
    auto seen = scripted_exchange("HTTP/1.1 200 OK\r\nX-" + secret_hex_lower + ": 1\r\n" + secret_hex_upper +
                                      ": 2\r\nContent-Length: 2\r\n\r\nok",
                                  status);
    EXPECT_EQ(status, 200);
    expect_no_secret(seen);
    EXPECT_NE(seen.find("X-vaultgate-placeholder-BENCH_KEY: 1\r\n"), std::string::npos) << seen;
}

// Anything but no coding or exactly one "identity" field is refused: a second
// field (or a list) would leave the body compressed past the scan.
TEST_F(RedactTest, AmbiguousContentCodingIs502) {
    const std::string body = std::string("gz:") + test_secret;
    const std::string framing = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (const std::string& coding :
         {std::string("Content-Encoding: identity\r\nContent-Encoding: gzip\r\n"),
          std::string("Content-Encoding: gzip\r\nContent-Encoding: identity\r\n"),
          std::string("Content-Encoding: identity, gzip\r\n"),
          std::string("Content-Encoding: identity\r\nContent-Encoding: identity\r\n"),
          std::string("Content-Encoding: GZIP\r\n"), std::string("Content-Encoding: \r\n")}) {
        SCOPED_TRACE(coding);
        int status = 0;
        auto seen = scripted_exchange("HTTP/1.1 200 OK\r\n" + coding + framing, status);
        EXPECT_EQ(status, 502);
        EXPECT_NE(seen.find("compressed_response_refused"), std::string::npos) << seen;
        EXPECT_EQ(seen.find("gz:"), std::string::npos) << seen;
        expect_no_secret(seen);
    }
    // A single identity, in any case, is no coding at all.
    int status = 0;
    auto seen = scripted_exchange("HTTP/1.1 200 OK\r\nContent-Encoding: IDENTITY\r\n" + framing, status);
    EXPECT_EQ(status, 200);
    expect_no_secret(seen);
    EXPECT_NE(seen.find("gz:vaultgate-placeholder-BENCH_KEY"), std::string::npos) << seen;
}

// Only plain chunked is read as a transfer coding; any other would reach the
// client unlabelled and unscanned.
TEST_F(RedactTest, ATransferCodingOtherThanChunkedIs502) {
    for (const std::string& coding :
         {std::string("gzip, chunked"), std::string("gzip"), std::string("chunked, gzip")}) {
        SCOPED_TRACE(coding);
        int status = 0;
        auto seen = scripted_exchange(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: " + coding + "\r\n\r\n5\r\ngz:xx\r\n0\r\n\r\n", status);
        EXPECT_EQ(status, 502);
        EXPECT_EQ(seen.find("gz:"), std::string::npos) << seen;
    }
}

TEST_F(RedactTest, ServicesWithoutRedactionPassTheBodyUntouched) {
    auto c = open("api.bound.test", bound_.port());
    c->write("GET /reflect?split=5 HTTP/1.1\r\nHost: api.bound.test:" + std::to_string(bound_.port()) + "\r\n\r\n");
    auto r = c->read_response();
    ASSERT_TRUE(r);
    // Without redact_response the origin's reflection is passed as is: the
    // operator chose that, and the test shows the flag is what protects.
    EXPECT_NE(r->body.find(test_secret), std::string::npos);
}

}  // namespace
}  // namespace vaultgate::test
