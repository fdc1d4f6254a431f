// HTTP/2 from the client to an HTTP/1.1 origin: ALPN, injection, bodies, the
// :authority check, malformed requests, redaction, and the access log's proto.
#include "h2_fixture.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

namespace vaultgate::test {
namespace {

constexpr int protocol_error = 1;

TEST_F(H2Test, CurlSpeaksH2AndTheRequestIsInjected) {
    const auto out = curl({"--http2", "-w", " %{http_version} %{http_code}",
                           "https://" + bound_authority() + "/echo?q=1", "-H", "x-api-key: placeholder"});
    EXPECT_EQ(out, "ok 2 200");
    const auto seen = bound_.requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].method, "GET");
    EXPECT_EQ(seen[0].target, "/echo?q=1");
    EXPECT_EQ(seen[0].header_values("x-api-key"), std::vector<std::string>{test_secret});
    EXPECT_EQ(seen[0].header_values("host"), std::vector<std::string>{bound_authority()});
    EXPECT_TRUE(proxy_->wait_for_log("\"proto\":\"h2\"")) << proxy_->access_log_text();
    EXPECT_TRUE(proxy_->wait_for_log("\"path\":\"/echo\",\"status\":200"));
}

TEST_F(H2Test, CurlUploadsABodyInManyDataFrames) {
    const std::string body(300000, 'u');
    const auto file = dir_.write("body.bin", body);
    const auto out = curl({"--http2", "--data-binary", "@" + file, "https://" + bound_authority() + "/upload"});
    EXPECT_EQ(out, "300000");
    const auto seen = bound_.requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].body, body);
    EXPECT_TRUE(proxy_->wait_for_log("\"bytes_up\":300000"));
}

TEST_F(H2Test, HttpxWithHttp2GetsAnswersOverH2) {
    const auto r = h2_client(bound_authority(), {"httpx"});
    EXPECT_EQ(r["get"]["status"], 200);
    EXPECT_EQ(r["get"]["version"], "HTTP/2");
    EXPECT_EQ(r["get"]["body"], "ok");
    EXPECT_EQ(r["post"]["status"], 200);
    EXPECT_EQ(r["post"]["body"], "100000");
    const auto seen = bound_.requests();
    ASSERT_EQ(seen.size(), 2u);
    for (const auto& s : seen) EXPECT_EQ(s.header_values("x-api-key"), std::vector<std::string>{test_secret});
}

TEST_F(H2Test, AlpnHttp11OnlyKeepsClientsOnHttp11) {
    start_proxy("", "mitm:\n  alpn: [http/1.1]\n");
    EXPECT_EQ(curl({"--http2", "-w", " %{http_version}", "https://" + bound_authority() + "/echo"}), "ok 1.1");
    EXPECT_TRUE(proxy_->wait_for_log("\"proto\":\"h1\""));
}

TEST_F(H2Test, Http11ClientsStillGetHttp11) {
    EXPECT_EQ(curl({"--http1.1", "-w", " %{http_version}", "https://" + bound_authority() + "/echo"}), "ok 1.1");
    EXPECT_TRUE(proxy_->wait_for_log("\"proto\":\"h1\""));
}

TEST_F(H2Test, AuthorityOfAnotherHostGets421OnThatStreamOnly) {
    const auto r = h2_client(bound_authority(), {"--then", "/echo", "request", "/echo",
                                                 ":authority=wrong.test:" + std::to_string(bound_.port())});
    EXPECT_EQ(r["status"], 421);
    EXPECT_EQ(r["then"]["status"], 200);  // the connection goes on
    EXPECT_EQ(bound_.requests().size(), 1u);
}

TEST_F(H2Test, HostFieldIsCheckedWhenAuthorityIsAbsent) {
    const auto r = h2_client(bound_authority(), {"request", "/echo", "~:authority", "host=wrong.test"});
    EXPECT_EQ(r["status"], 421);
    EXPECT_TRUE(bound_.requests().empty());
}

// A host field that names the same entity in another spelling is no mismatch.
TEST_F(H2Test, AHostFieldSpellingTheAuthorityOtherwiseIsServed) {
    const auto r = h2_client(bound_authority(),
                             {"request", "/echo", "host=API.Bound.Test.:" + std::to_string(bound_.port())});
    EXPECT_EQ(r["status"], 200) << r.dump();
    EXPECT_EQ(bound_.requests().size(), 1u);
}

TEST_F(H2Test, MalformedRequestsAreStreamErrorsAndNeverForwarded) {
    const std::vector<std::vector<std::string>> cases = {
        {"request", "/echo", "X-Upper=v"},         // upper-case name
        {"request", "/echo", "connection=close"},  // connection-specific field
        {"request", "/echo", "te=gzip"},           // te other than trailers
        {"request", "/echo", "~:path"},            // missing pseudo-field
        {"request", "/echo", "+:method=GET"},      // repeated pseudo-field
        {"request", "/echo", "x-a=b\\rc"},         // CR in a value
        {"request", "/echo", "x-a=b\\0c"},         // NUL in a value
        {"request", "/echo", "x-a=b\\x01c"},       // other control byte
        {"request", "/echo", "host=other.test"},   // host differs from :authority
        {"request", "/echo", ":scheme=http"},      // not https inside TLS
    };
    for (const auto& c : cases) {
        const auto r = h2_client(bound_authority(), c);
        EXPECT_TRUE(r["reset"] == protocol_error || r["goaway"] == protocol_error) << c.back() << ": " << r.dump();
        EXPECT_TRUE(r["status"].is_null()) << c.back();
    }
    // content-length that the DATA does not match
    const auto r =
        h2_client(bound_authority(), {"request", "/upload", ":method=POST", "content-length=10"}, "abc", true);
    EXPECT_EQ(r["reset"], protocol_error) << r.dump();
    EXPECT_TRUE(bound_.requests().empty()) << bound_.raw();
}

TEST_F(H2Test, GrpcToAnHttp11OriginIsRefusedNotMangled) {
    const auto r =
        h2_client(bound_authority(),
                  {"request", "/pkg.Service/Method", ":method=POST", "content-type=application/grpc", "te=trailers"},
                  "grpc-frame", true);
    EXPECT_EQ(r["status"], 502) << r.dump();
    EXPECT_EQ(r["headers"]["x-vaultgate-reason"], "grpc_needs_h2_origin");
    EXPECT_TRUE(bound_.requests().empty());
}

// A body nobody reads (its request was refused at once) does not keep the
// connection's window: more than that window of it still goes through, and
// the next request on the connection is served.
// The proxy runs in this process: its resident set, from /proc.
long own_rss_kib() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST_F(H2Test, AnUnreadBodyDoesNotStallTheConnection) {
    const auto r = h2_client(bound_authority(), {"unread-body"});
    EXPECT_EQ(r["status"], 502) << r.dump();
    EXPECT_FALSE(r["stalled"].get<bool>()) << r.dump();
    EXPECT_EQ(r["then"]["status"], 200) << r.dump();
    EXPECT_EQ(bound_.requests().size(), 1u);
}

TEST_F(H2Test, AnUnreadBodyIsDroppedNotBuffered) {
    // The stream stays open (no END_STREAM) while 64 MiB more arrive: the
    // proxy must drop them, not keep them for a reader that never comes.
    const long before = own_rss_kib();
    std::atomic<bool> done{false};
    long peak = before;
    std::thread sampler([&] {
        for (int i = 0; i < 12000 && !done.load(); ++i) {  // at most 60 s
            peak = std::max(peak, own_rss_kib());
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    const auto r = h2_client(bound_authority(), {"unread-body", std::to_string(64 << 20)});
    done = true;
    sampler.join();
    EXPECT_EQ(r["status"], 502) << r.dump();
    EXPECT_FALSE(r["stalled"].get<bool>()) << r.dump();
    EXPECT_LT(peak - before, 16 * 1024) << "the proxy grew by " << (peak - before) << " KiB";
}

TEST_F(H2Test, RedactionWorksAcrossDataFrames) {
    for (const char* split : {"1", "7", "100"}) {
        const auto r = h2_client(redact_authority(), {"request", std::string("/reflect?split=") + split});
        EXPECT_EQ(r["status"], 200);
        const std::string body = r["body"];
        EXPECT_FALSE(body.empty());
        EXPECT_EQ(body.find(test_secret), std::string::npos) << body;
        EXPECT_EQ(r.dump().find(test_secret), std::string::npos);
    }
}

}  // namespace
}  // namespace vaultgate::test
