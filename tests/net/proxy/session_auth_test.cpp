// Which session a transparent client (no credentials) belongs to: the one
// pinned to its source address, else the default session if its own source
// rule lets the client in. Pure lookups on a hand-made state.
#include "net/proxy/session_auth.hpp"  // internal to the proxy: no public header

#include <gtest/gtest.h>

#include <chrono>

namespace vaultgate::net {
namespace {

Session session(const std::string& id, std::optional<std::string> source, std::chrono::seconds expires_in) {
    Session s;
    s.id = id;
    if (source) s.source = parse_cidr(*source);
    s.expires_at = std::chrono::system_clock::now() + expires_in;
    return s;
}

GatewayState state_with(std::vector<Session> sessions, bool with_default, std::optional<std::string> default_source) {
    GatewayState st;
    for (auto& s : sessions) st.sessions.emplace(s.id, std::move(s));
    if (with_default) {
        Session d;
        d.id = "default";
        if (default_source) d.source = parse_cidr(*default_source);
        st.sessions.emplace("default", std::move(d));
        st.default_session = "default";
    }
    return st;
}

TEST(SessionForSource, ASessionPinnedToTheAddressWins) {
    const auto st = state_with({session("ses_pinned", "10.0.0.0/24", std::chrono::hours(1))}, true, std::nullopt);
    const Session* s = session_for_source(st, "10.0.0.5");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, "ses_pinned");
    s = session_for_source(st, "10.0.1.5");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, "default");
}

TEST(SessionForSource, AnExpiredPinnedSessionIsPassedOver) {
    const auto st = state_with({session("ses_old", "10.0.0.0/24", -std::chrono::seconds(1))}, true, std::nullopt);
    const Session* s = session_for_source(st, "10.0.0.5");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, "default");
}

// The default session's own source rule applies here as it does to explicit
// proxy clients: a client outside it gets no session at all.
TEST(SessionForSource, TheDefaultSessionKeepsItsSourceRule) {
    const auto st = state_with({}, true, std::string("192.168.0.0/16"));
    const Session* s = session_for_source(st, "192.168.1.1");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, "default");
    EXPECT_EQ(session_for_source(st, "172.16.0.1"), nullptr);
    EXPECT_EQ(session_for_source(st, "not an address"), nullptr);
}

// Overlapping ranges: the narrowest wins, not the lowest id; one range pinned
// twice gives no session rather than a guess.
TEST(SessionForSource, TheNarrowestOfOverlappingRangesWins) {
    const auto hour = std::chrono::hours(1);
    const auto st = state_with({session("ses_a_wide", "10.0.0.0/8", hour), session("ses_b_narrow", "10.0.0.0/24", hour),
                                session("ses_c_twin", "10.7.0.0/16", hour), session("ses_d_twin", "10.7.0.0/16", hour)},
                               true, std::nullopt);
    const Session* s = session_for_source(st, "10.0.0.5");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, "ses_b_narrow");
    s = session_for_source(st, "10.3.0.5");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->id, "ses_a_wide");
    EXPECT_EQ(session_for_source(st, "10.7.0.5"), nullptr);
}

TEST(SessionForSource, NoDefaultSessionAndNoPinMeansNoSession) {
    const auto st = state_with({session("ses_pinned", "10.0.0.0/24", std::chrono::hours(1))}, false, std::nullopt);
    EXPECT_EQ(session_for_source(st, "10.9.9.9"), nullptr);
}

}  // namespace
}  // namespace vaultgate::net
