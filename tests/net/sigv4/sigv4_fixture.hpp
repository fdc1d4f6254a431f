#pragma once
// The aws-sigv4 tests' fixture: the proxy (in process, logging at debug
// level into a file) with a vault of AWS keys bound to several AWS endpoint names, and an origin
// (sigv4_origin.py) that serves all of them on one port and re-verifies each
// signature with botocore under the real secret key. Assertions are on what
// the origin saw and what the client got.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace vaultgate::test {

inline constexpr const char* aws_access_key_id = "AKIAVAULTGATETEST001";
inline constexpr const char* aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYVAULTGATEKEY";
inline constexpr const char* aws_session_token = "FwoGZXIvYXdzVAULTGATE/session+token=";

// The verifying origin as a child process.
class Sigv4Origin {
public:
    Sigv4Origin(const TempDir& dir, const TestPki& pki, const std::vector<std::string>& hosts);
    ~Sigv4Origin();
    Sigv4Origin(const Sigv4Origin&) = delete;
    Sigv4Origin& operator=(const Sigv4Origin&) = delete;
    std::uint16_t port() const { return port_; }
    // Every verdict so far, in arrival order.
    std::vector<nlohmann::json> verdicts() const;

private:
    std::string log_path_;
    std::uint16_t port_ = 0;
    int pid_ = -1;
};

class Sigv4Test : public ::testing::Test {
protected:
    Sigv4Test();
    ~Sigv4Test() override;

    // Starts vaultgate; `limits` is the body of its limits: block.
    void start(const std::string& limits = "");
    // Stops vaultgate, checks that no log line holds a key, and returns the access log.
    std::string stop();

    // CONNECT to host (on the origin's port), TLS against the vaultgate CA.
    std::unique_ptr<RawClient> open(const std::string& host);
    // One request on a new connection to `host`: "METHOD TARGET", fields
    // (without Host), body. The response, or status 0.
    RawClient::Response send(const std::string& host, const std::string& request_line, const std::string& fields,
                             const std::string& body = "");
    std::string authority(const std::string& host) const { return host + ":" + std::to_string(origin_->port()); }

    // The verdict the origin wrote into the response body.
    static nlohmann::json verdict_of(const RawClient::Response& r);
    // The values of header `name` (any case) the origin saw.
    static std::vector<std::string> seen_header(const nlohmann::json& verdict, const std::string& name);

    TempDir dir_;
    TestPki pki_;
    std::unique_ptr<Sigv4Origin> origin_;
    std::unique_ptr<ProxyUnderTest> proxy_;
    int saved_stderr_ = -1;  // the diagnostic log goes to a file while the proxy runs
};

}  // namespace vaultgate::test
