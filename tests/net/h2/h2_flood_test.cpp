// HTTP/2 limits and flood guards: each flood ends its connection with GOAWAY
// ENHANCE_YOUR_CALM while a connection opened before it is served on; HPACK
// abuse is a COMPRESSION_ERROR or a 431, never a forwarded request.
#include "h2_fixture.hpp"

namespace vaultgate::test {
namespace {

constexpr int compression_error = 9;
constexpr int enhance_your_calm = 11;

class H2FloodTest : public H2Test, public ::testing::WithParamInterface<const char*> {};

TEST_P(H2FloodTest, EndsThatConnectionWithGoawayAndServesOthers) {
    const auto r = h2_client(bound_authority(), {"flood", GetParam()});
    EXPECT_EQ(r["goaway"], enhance_your_calm) << r.dump();
    EXPECT_EQ(r["other_status"], 200) << r.dump();
    // Only the bystander's request reached the origin.
    EXPECT_EQ(bound_.requests().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Floods, H2FloodTest,
                         ::testing::Values("settings", "ping", "priority", "empty-data", "rapid-reset", "continuation"),
                         [](const auto& info) {
                             std::string name = info.param;
                             std::erase(name, '-');
                             return name;
                         });

TEST_F(H2Test, HpackTableSizeUpdatePastTheLimitIsACompressionError) {
    const auto r = h2_client(bound_authority(), {"table-size"});
    EXPECT_EQ(r["goaway"], compression_error) << r.dump();
    EXPECT_TRUE(bound_.requests().empty());
}

TEST_F(H2Test, HpackBombIsRefusedWith431) {
    const auto r = h2_client(bound_authority(), {"hpack-bomb"});
    EXPECT_EQ(r["status"], 431) << r.dump();
    EXPECT_TRUE(bound_.requests().empty());
}

TEST_F(H2Test, TooManyFieldsIs431AndTheConnectionGoesOn) {
    std::vector<std::string> args{"--then", "/echo", "request", "/echo"};
    for (int i = 0; i < 150; ++i) args.push_back("x-f" + std::to_string(i) + "=v");
    const auto r = h2_client(bound_authority(), args);
    EXPECT_EQ(r["status"], 431) << r.dump();
    EXPECT_EQ(r["then"]["status"], 200) << r.dump();
    EXPECT_EQ(bound_.requests().size(), 1u);
}

// A refused head leaves none of its bytes in the access log: a path may hold
// a token, as a chat bot's API paths do.
TEST_F(H2Test, ARefusedHeadIsLoggedWithoutItsPath) {
    std::vector<std::string> args{"request", "/bot-path-token-7f3a/send"};
    for (int i = 0; i < 150; ++i) args.push_back("x-f" + std::to_string(i) + "=v");
    const auto r = h2_client(bound_authority(), args);
    EXPECT_EQ(r["status"], 431) << r.dump();
    EXPECT_TRUE(proxy_->wait_for_log("\"status\":431")) << proxy_->access_log_text();
    EXPECT_EQ(proxy_->access_log_text().find("bot-path-token-7f3a"), std::string::npos)
        << proxy_->access_log_text();
}

}  // namespace
}  // namespace vaultgate::test
