#include "vaultgate/state/removed_sessions.hpp"

#include <gtest/gtest.h>

namespace vaultgate {
namespace {

using namespace std::chrono;

Session token_session(const std::string& id, std::optional<system_clock::time_point> expires = std::nullopt) {
    Session s;
    s.id = id;
    s.token_digest = "digest-of-" + id;
    s.expires_at = expires;
    return s;
}

TEST(RemovedSessionsTest, TellsRevokedFromExpiredAndForgetsRestoredIds) {
    const auto now = system_clock::now();
    GatewayState before;
    before.sessions["ses_deleted"] = token_session("ses_deleted", now + hours(1));
    before.sessions["ses_lapsed"] = token_session("ses_lapsed", now - seconds(1));
    before.sessions["ses_kept"] = token_session("ses_kept");
    before.sessions["default"].id = "default";  // no token: a client can never name it
    GatewayState after;
    after.sessions["ses_kept"] = token_session("ses_kept");

    RemovedSessions removed;
    removed.note(before, after, now);
    EXPECT_EQ(removed.find("ses_deleted"), SessionRemoval::revoked);
    EXPECT_EQ(removed.find("ses_lapsed"), SessionRemoval::expired);
    EXPECT_EQ(removed.find("ses_kept"), std::nullopt);
    EXPECT_EQ(removed.find("default"), std::nullopt);
    EXPECT_EQ(removed.find("ses_never"), std::nullopt);

    GatewayState restored = after;
    restored.sessions["ses_deleted"] = token_session("ses_deleted");
    removed.note(after, restored, now);
    EXPECT_EQ(removed.find("ses_deleted"), std::nullopt);
    EXPECT_EQ(removed.find("ses_lapsed"), SessionRemoval::expired);
}

TEST(RemovedSessionsTest, KeepsTheMostRecentCapacityIds) {
    const auto now = system_clock::now();
    RemovedSessions removed;
    const GatewayState empty;
    for (std::size_t i = 0; i < RemovedSessions::capacity + 5; ++i) {
        GatewayState one;
        const std::string id = "ses_" + std::to_string(i);
        one.sessions[id] = token_session(id);
        removed.note(one, empty, now);
    }
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(removed.find("ses_" + std::to_string(i)), std::nullopt) << i;
    EXPECT_EQ(removed.find("ses_5"), SessionRemoval::revoked);
    EXPECT_EQ(removed.find("ses_" + std::to_string(RemovedSessions::capacity + 4)), SessionRemoval::revoked);
}

}  // namespace
}  // namespace vaultgate
