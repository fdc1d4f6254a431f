// The MITM path end to end: injection, the leaf and its chain, TLS resumption
// and cipher order on both sides.
#include "mitm_fixture.hpp"
#include "test_text.hpp"

#include <filesystem>
#include <fstream>

namespace vaultgate::test {
namespace {

TEST_F(MitmTest, InjectsExactlyOneKeyReplacingEveryVariant) {
    auto c = open_bound();
    c->write(get("/echo", "X-Api-Key: placeholder\r\nx-api-key: second\r\nX_API_KEY: third\r\nAccept: */*\r\n"));
    auto r = c->read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "ok");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(reqs[0].header_values("x_api_key").empty());
    EXPECT_EQ(reqs[0].header_values("accept"), std::vector<std::string>{"*/*"});
    EXPECT_EQ(reqs[0].target, "/echo");
    // The client never sees the secret.
    EXPECT_EQ(r->head.find(test_secret), std::string::npos);
}

TEST_F(MitmTest, AnIntermediateCaIsSentWithTheLeafSoAClientTrustingOnlyTheRootVerifies) {
    // A root and an intermediate signed by it, as a company PKI would issue.
    const auto chain = write_root_and_intermediate_ca(dir_);
    const auto& root = chain.root_cert;
    auto config = base_config(dir_, pki_, bound_.port(), other_.port());
    for (auto [from, to] : {std::pair{pki_.proxy_ca_cert, chain.intermediate_cert},
                            std::pair{pki_.proxy_ca_key, chain.intermediate_key}}) {
        auto at = config.find(from);
        ASSERT_NE(at, std::string::npos);
        config.replace(at, from.size(), to);
    }
    proxy_ = std::make_unique<ProxyUnderTest>(config);

    RawClient c(proxy_->port());
    ASSERT_EQ(c.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
    std::string err;
    ASSERT_TRUE(c.start_tls(root, "api.bound.test", &err)) << err;
    c.write(get("/echo", "x-api-key: placeholder\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    ASSERT_EQ(bound_.requests().size(), 1u);
    EXPECT_EQ(bound_.requests()[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
}

// Session resumption (tls_contexts.cpp), seen by OpenSSL's own client reconnecting
// five times with the session of its previous connection.
std::string reconnect_five_times(std::uint16_t proxy_port, const std::string& authority, const std::string& ca,
                                 const std::string& version_flag) {
    auto res = run_command({"openssl", "s_client", "-proxy", "127.0.0.1:" + std::to_string(proxy_port), "-connect",
                            authority, "-servername", "api.bound.test", version_flag, "-reconnect", "-CAfile", ca,
                            "-verify_return_error"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    return res.out;
}

// A TLS 1.3 client resumes with its one ticket (and a fresh key exchange).
// (s_client -reconnect does not wait for a TLS 1.3 ticket: the session is
// saved after a whole exchange instead, and offered by a second s_client.)
TEST_F(MitmTest, ATls13ClientResumesItsLastSession) {
    const auto session = dir_.file("tls13-session.pem");
    auto client = [&](const std::string& session_flag) {
        return run_command({"openssl", "s_client", "-proxy", "127.0.0.1:" + std::to_string(proxy_->port()), "-connect",
                            bound_authority(), "-servername", "api.bound.test", "-tls1_3", session_flag, session,
                            "-CAfile", pki_.proxy_ca_cert, "-verify_return_error", "-ign_eof"},
                           get("/echo", "Connection: close\r\n"));
    };
    // (Each exits 1 at the end: vaultgate closes after `Connection: close`
    // without a close_notify, which s_client reports as an unexpected EOF.)
    auto first = client("-sess_out");
    EXPECT_EQ(count_of(first.out, "\nNew, TLSv1.3"), 1u) << first.out << first.err;
    EXPECT_NE(first.out.find("HTTP/1.1 200"), std::string::npos);
    ASSERT_TRUE(std::filesystem::exists(session));
    auto second = client("-sess_in");
    EXPECT_EQ(count_of(second.out, "\nReused, TLSv1.3"), 1u) << second.out;
    EXPECT_NE(second.out.find("HTTP/1.1 200"), std::string::npos);
}

// A TLS 1.2 client gets a full handshake each time: no ticket, no session cache.
TEST_F(MitmTest, ATls12ClientCannotResumeItsLastSession) {
    auto out = reconnect_five_times(proxy_->port(), bound_authority(), pki_.proxy_ca_cert, "-tls1_2");
    EXPECT_EQ(count_of(out, "\nNew, TLSv1.2"), 6u) << out;
    EXPECT_EQ(count_of(out, "\nReused, "), 0u);
    EXPECT_EQ(count_of(out, "TLS session ticket"), 0u);  // none offered either
}

// Both sides prefer AES-128-GCM: vaultgate's choice for TLS 1.2 clients...
TEST_F(MitmTest, ATls12ClientThatListsAes256FirstGetsAes128) {
    RawClient c(proxy_->port());
    SSL_CTX* client = c.tls_context().native_handle();
    SSL_CTX_set_max_proto_version(client, TLS1_2_VERSION);
    ASSERT_EQ(SSL_CTX_set_cipher_list(client, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256"), 1);
    ASSERT_EQ(c.connect(bound_authority()).rfind("HTTP/1.1 200", 0), 0u);
    std::string err;
    ASSERT_TRUE(c.start_tls(pki_.proxy_ca_cert, "api.bound.test", &err)) << err;
    EXPECT_STREQ(SSL_get_cipher_name(c.tls_native()), "ECDHE-ECDSA-AES128-GCM-SHA256");
    EXPECT_EQ(status_of_get(c, "/echo"), 200);
}

// ...and its first offer to a TLS 1.2 origin that takes the client's order, as nginx does.
TEST_F(MitmTest, ATls12OriginThatFollowsTheClientsOrderIsAskedForAes128First) {
    bound_.limit_to_tls12();
    auto c = open_bound();
    EXPECT_EQ(status_of_get(*c, "/echo"), 200);
    EXPECT_EQ(bound_.last_cipher(), "ECDHE-ECDSA-AES128-GCM-SHA256");
}

TEST_F(MitmTest, CurlThroughTheProxyGetsTheKeyInjected) {
    auto res = run_command({"curl", "-sS", "--max-time", "20", "--proxy",
                            "http://127.0.0.1:" + std::to_string(proxy_->port()), "--cacert", pki_.proxy_ca_cert, "-H",
                            "x-api-key: placeholder", "https://" + bound_authority() + "/echo"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_EQ(res.out, "ok");
    auto reqs = bound_.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_EQ(reqs[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_TRUE(proxy_->wait_for_log("\"ingress\":\"mitm\"")) << proxy_->access_log_text();
    EXPECT_TRUE(proxy_->wait_for_log("\"vault\":\"bench\"")) << proxy_->access_log_text();
}

}  // namespace
}  // namespace vaultgate::test
