#pragma once
// The HTTP/2 tests' fixture: the proxy in process, the recording TLS origin
// bound (api.bound.test) and one that redacts (redact.test), and real h2
// clients run as child processes: curl --http2, and h2_client.py
// (python3-httpx, and python3-h2 for raw frames). Assertions are on what the
// origin received, what the client saw, and the access log.
#include "harness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace vaultgate::test {

// h2_origin.py as a child process: an HTTP/2-only TLS origin (api.h2.test)
// that logs every request it received, one JSON line each.
class H2Origin {
public:
    H2Origin(const TempDir& dir, const TestPki& pki, const std::vector<std::string>& hosts);
    ~H2Origin();
    H2Origin(const H2Origin&) = delete;
    H2Origin& operator=(const H2Origin&) = delete;
    std::uint16_t port() const { return port_; }
    std::vector<nlohmann::json> requests() const;

private:
    std::string log_path_;
    int pid_ = -1;
    std::uint16_t port_ = 0;
};

class H2Test : public ::testing::Test {
protected:
    H2Test();
    void TearDown() override;

    // (Re)starts the proxy; `limits` are extra lines of its limits: block,
    // `extra` extra top-level YAML.
    void start_proxy(const std::string& limits = "", const std::string& extra = "");

    std::string bound_authority() const { return "api.bound.test:" + std::to_string(bound_.port()); }
    std::string redact_authority() const { return "redact.test:" + std::to_string(redacting_.port()); }
    // The HTTP/2 origin's service (h2_origin_test.cpp starts one).
    std::string h2_authority() const { return "api.h2.test:" + std::to_string(h2_origin_->port()); }
    // The same origin under a service that redacts the secret from responses.
    std::string h2_redact_authority() const { return "redact.h2.test:" + std::to_string(h2_origin_->port()); }
    void start_h2_origin();

    // Runs h2_client.py against `authority`: its JSON answer (null when it failed).
    nlohmann::json h2_client(const std::string& authority, const std::vector<std::string>& args,
                             const std::string& body = "", bool with_body = false);

    // Runs curl through the proxy; its stdout (with -w output appended).
    std::string curl(const std::vector<std::string>& args);

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_, redact_files_;
    RecordingUpstream bound_, redacting_;
    std::unique_ptr<H2Origin> h2_origin_;
    unsigned proxy_threads_ = 2;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

}  // namespace vaultgate::test
