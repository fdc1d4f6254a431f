// The heads of the HTTP/2 origin leg, as tables: the request's fields from
// the head the pipeline decided, which trailer fields may pass, what counts
// as gRPC, and the trailer section an HTTP/1.1 client gets.
#include "net/forward/h2_fields.hpp"
#include "net/forward/exchange.hpp"

#include <gtest/gtest.h>

namespace vaultgate::net {
namespace {

RequestHead outgoing(std::vector<Header> headers) {
    RequestHead head;
    head.method = "POST";
    head.target = "/v1/x?q=1";
    head.version_minor = 1;
    head.headers = std::move(headers);
    return head;
}

TEST(H2Fields, RequestFieldsStartWithThePseudoFieldsAndDropConnectionFields) {
    const auto fields = h2_request_fields(outgoing({{"Host", "api.example.com"},
                                                    {"X-Api-Key", "s"},
                                                    {"Connection", "x-hop"},
                                                    {"X-Hop", "1"},
                                                    {"Keep-Alive", "5"},
                                                    {"Transfer-Encoding", "chunked"},
                                                    {"TE", "trailers"},
                                                    {"Upgrade", "h2c"},
                                                    {"Content-Type", "application/json"}}),
                                          false);
    const std::vector<Header> expected = {
        {":method", "POST"},    {":scheme", "https"}, {":authority", "api.example.com"},
        {":path", "/v1/x?q=1"}, {"x-api-key", "s"},   {"content-type", "application/json"}};
    ASSERT_EQ(fields.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(fields[i].name, expected[i].name) << i;
        EXPECT_EQ(fields[i].value, expected[i].value) << i;
    }
}

TEST(H2Fields, TeTrailersGoesAlongOnlyWhenAsked) {
    const auto with = h2_request_fields(outgoing({{"Host", "a.test"}}), true);
    EXPECT_EQ(with.back().name, "te");
    EXPECT_EQ(with.back().value, "trailers");
    const auto without = h2_request_fields(outgoing({{"Host", "a.test"}, {"te", "trailers"}}), false);
    for (const auto& f : without) EXPECT_NE(f.name, "te");
}

TEST(H2Fields, TrailerFieldsThatFrameRouteOrAuthenticateAreRefused) {
    for (const char* name : {"content-length", "Content-Type", "content-encoding", "content-range", "host",
                             "authorization", "cookie", "set-cookie", "trailer", "transfer-encoding", "connection",
                             "te", "keep-alive", "upgrade", "proxy-authorization", ":status", ""})
        EXPECT_FALSE(allowed_in_trailers(name)) << name;
    for (const char* name : {"grpc-status", "grpc-message", "x-checksum", "server-timing"})
        EXPECT_TRUE(allowed_in_trailers(name)) << name;
}

TEST(H2Fields, GrpcIsApplicationGrpcAndItsSubtypes) {
    const std::vector<std::pair<const char*, bool>> cases = {
        {"application/grpc", true},      {"application/grpc+proto", true},
        {"Application/GRPC+json", true}, {"application/grpc;x=1", true},
        {"application/grpc-web", false}, {"application/grpcx", false},
        {"application/json", false},     {"text/grpc", false},
    };
    for (const auto& [type, grpc] : cases) EXPECT_EQ(is_grpc(outgoing({{"Content-Type", type}})), grpc) << type;
    EXPECT_FALSE(is_grpc(outgoing({})));
}

TEST(H2Fields, TrailersForAnHttp11ClientAreFilteredAndFramed) {
    auto kept = trailers_for_client({{"grpc-status", "0"}, {"content-length", "5"}, {"bad name", "x"}}, nullptr);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].name, "grpc-status");
    EXPECT_EQ(last_chunk_with(kept), "0\r\ngrpc-status: 0\r\n\r\n");
    EXPECT_EQ(last_chunk_with({}), "0\r\n\r\n");
}

}  // namespace
}  // namespace vaultgate::net
