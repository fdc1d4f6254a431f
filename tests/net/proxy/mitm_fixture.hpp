#pragma once
// The MITM tests' fixture: a real client, the proxy, and two recording TLS
// upstreams (a bound one and an allowed one), all on 127.0.0.1. Assertions are
// on what the upstream received and what the client saw.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

namespace vaultgate::test {

class MitmTest : public ::testing::Test {
protected:
    MitmTest()
        : pki_(dir_),
          bound_files_(pki_.server_files(dir_, "api.bound.test")),
          other_files_(pki_.server_files(dir_, "other.test")),
          bound_(bound_files_.first, bound_files_.second),
          other_(other_files_.first, other_files_.second) {}

    void SetUp() override { start_proxy(); }

    void start_proxy(const std::string& extra_services = "", const std::string& extra_policy = "") {
        proxy_.reset();
        proxy_ = std::make_unique<ProxyUnderTest>(
            base_config(dir_, pki_, bound_.port(), other_.port(), extra_services, extra_policy));
    }

    void TearDown() override {
        // Whatever happened in the test, no log line may carry the secret.
        EXPECT_EQ(stop_and_read_access_log(proxy_).find(test_secret), std::string::npos);
    }

    std::string bound_authority() const { return "api.bound.test:" + std::to_string(bound_.port()); }

    // CONNECT to the bound host and complete TLS against the proxy CA.
    std::unique_ptr<RawClient> open_bound() {
        auto c = std::make_unique<RawClient>(proxy_->port());
        auto head = c->connect(bound_authority());
        EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
        std::string err;
        EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, "api.bound.test", &err)) << err;
        return c;
    }

    // GET `path` on `c`; the response's status, 0 when none came.
    int status_of_get(RawClient& c, const std::string& path) {
        c.write(get(path));
        auto r = c.read_response();
        return r ? r->status : 0;
    }

    std::string get(const std::string& path, const std::string& extra = "") const {
        return "GET " + path + " HTTP/1.1\r\nHost: " + bound_authority() + "\r\n" + extra + "\r\n";
    }

    TempDir dir_;
    TestPki pki_;
    std::pair<std::string, std::string> bound_files_, other_files_;
    RecordingUpstream bound_, other_;
    std::unique_ptr<ProxyUnderTest> proxy_;
};

}  // namespace vaultgate::test
