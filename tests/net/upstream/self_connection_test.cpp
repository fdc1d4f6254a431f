// How vaultgate knows its own connections when they arrive back at one of its
// listeners: real sockets on 127.0.0.1, a listener standing in for vaultgate's,
// a connection "vaultgate" dialled to it, and one from anybody else.
#include "net/upstream/self_connection.hpp"  // internal to the proxy: no public header

#include <gtest/gtest.h>

#include <algorithm>

namespace vaultgate::net {
namespace {

tcp::endpoint mapped(const tcp::endpoint& ep) {
    return {asio::ip::make_address_v6(asio::ip::v4_mapped, ep.address().to_v4()), ep.port()};
}

class OutboundSocketsTest : public ::testing::Test {
protected:
    tcp::endpoint listener_endpoint() const { return listener_.local_endpoint(); }

    asio::io_context ioc_;
    tcp::acceptor listener_{ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    OutboundSockets own_;
};

TEST_F(OutboundSocketsTest, KnowsItsOwnConnectionAsTheListenerSeesIt) {
    tcp::socket ours(ioc_), theirs(ioc_);
    ours.connect(listener_endpoint());
    own_.add(ours);
    theirs.connect(listener_endpoint());
    for (int i = 0; i < 2; ++i) {
        tcp::socket accepted = listener_.accept();
        const bool from_ours = accepted.remote_endpoint() == ours.local_endpoint();
        EXPECT_EQ(own_.contains(accepted.remote_endpoint(), accepted.local_endpoint()), from_ours);
    }
    // A v4-mapped spelling of either end is the same connection.
    EXPECT_TRUE(own_.contains(mapped(ours.local_endpoint()), mapped(listener_endpoint())));
}

// Linux lets two sockets share a local port when their destinations differ:
// the same local endpoint towards another destination is somebody else's.
TEST_F(OutboundSocketsTest, MatchesTheDestinationToo) {
    tcp::socket ours(ioc_);
    ours.connect(listener_endpoint());
    own_.add(ours);
    tcp::endpoint elsewhere(listener_endpoint().address(), listener_endpoint().port() == 1 ? 2 : 1);
    EXPECT_FALSE(own_.contains(ours.local_endpoint(), elsewhere));
    // Reached through a redirect: what the connection was addressed to counts.
    EXPECT_TRUE(own_.contains(ours.local_endpoint(), ours.remote_endpoint()));
}

TEST_F(OutboundSocketsTest, AClosedConnectionIsNoLongerOurs) {
    tcp::socket ours(ioc_);
    ours.connect(listener_endpoint());
    own_.add(ours);
    const auto local = ours.local_endpoint();
    ours.close();
    EXPECT_FALSE(own_.contains(local, listener_endpoint()));
}

// The descriptor of a closed connection is soon another socket's; that socket
// is not the recorded connection.
TEST_F(OutboundSocketsTest, AReusedDescriptorIsNotTheRecordedConnection) {
    tcp::socket ours(ioc_);
    ours.connect(listener_endpoint());
    own_.add(ours);
    const auto local = ours.local_endpoint();
    const int fd = ours.native_handle();
    ours.close();
    tcp::socket next(ioc_);
    next.connect(listener_endpoint());
    // What the test is about: the lowest free descriptor comes back, for another connection.
    ASSERT_EQ(next.native_handle(), fd);
    ASSERT_NE(next.local_endpoint(), local);
    EXPECT_FALSE(own_.contains(local, listener_endpoint()));
}

TEST(InterfaceAddresses, IncludeLoopback) {
    auto addresses = interface_addresses();
    ASSERT_TRUE(addresses);
    EXPECT_NE(std::find(addresses->begin(), addresses->end(), IpAddress::v4(127, 0, 0, 1)), addresses->end());
    LocalAddresses local;
    EXPECT_TRUE(local.current()->empty());
    EXPECT_EQ(*local.refresh(), *addresses);
    EXPECT_EQ(*local.current(), *addresses);
}

}  // namespace
}  // namespace vaultgate::net
