// Requests by the client's HTTP version: counted per access-log proto, both
// series always rendered.
#include "vaultgate/observe/metrics.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

TEST(MetricsProtoTest, CountsRequestsByHttpVersion) {
    Metrics m;
    m.proto_request("h2");
    m.proto_request("h2");
    m.proto_request("h1");
    m.proto_request("h3");  // not a version vaultgate speaks: not counted
    EXPECT_EQ(m.proto_requests("h1"), 1u);
    EXPECT_EQ(m.proto_requests("h2"), 2u);
    const std::string text = m.render({});
    EXPECT_NE(text.find("vaultgate_http_requests_total{proto=\"h1\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("vaultgate_http_requests_total{proto=\"h2\"} 2\n"), std::string::npos);
    EXPECT_EQ(text.find("h3"), std::string::npos);
}

}  // namespace
}  // namespace vaultgate
