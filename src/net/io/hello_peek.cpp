#include "net/io/hello_peek.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace vaultgate::net {

namespace {

// How many unread bytes make the socket readable (the kernel's default is
// one). Restored at the end, for whoever reads the socket next. Best effort:
// where it cannot be set, every fragment wakes the reader, which stays correct.
class ReceiveLowWater {
public:
    explicit ReceiveLowWater(tcp::socket& socket) : fd_(socket.native_handle()) {}
    ReceiveLowWater(const ReceiveLowWater&) = delete;
    ReceiveLowWater& operator=(const ReceiveLowWater&) = delete;
    ~ReceiveLowWater() {
        if (raised_) set(1);
    }
    void raise_to(std::size_t bytes) {
        set(static_cast<int>(bytes));
        raised_ = true;
    }

private:
    void set(int bytes) { ::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes); }
    int fd_;
    bool raised_ = false;
};

// True once the client shut its side: whatever it sent is all there will be.
bool peer_closed(tcp::socket& socket) {
    pollfd p{socket.native_handle(), POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

HelloPeek unfinished(bool timed_out) { return HelloPeek{HelloResult{HelloStatus::incomplete, {}}, timed_out}; }

}  // namespace

bool readable_now(tcp::socket& socket) {
    char byte;
    const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

awaitable<HelloPeek> peek_client_hello(tcp::socket& socket, std::string_view already_read, Watchdog& watchdog,
                                       clock::duration timeout, Metrics& metrics) {
    watchdog.arm(timeout);
    ReceiveLowWater low_water(socket);
    const std::size_t prefix = already_read.size();
    std::string bytes(already_read);
    bool woken = false;
    for (;;) {
        HelloResult hello = read_client_hello(bytes);
        if (hello.status != HelloStatus::incomplete) co_return HelloPeek{std::move(hello), false};
        const std::size_t needed = client_hello_bytes_needed(bytes);
        if (needed <= bytes.size()) co_return HelloPeek{HelloResult{HelloStatus::malformed, {}}, false};

        // A peek always starts at the first unread byte: what came before is seen again.
        const std::size_t had = bytes.size();
        bytes.resize(needed);
        metrics.client_hello_peek();
        const ssize_t n = ::recv(socket.native_handle(), bytes.data() + prefix, needed - prefix, MSG_PEEK);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) co_return unfinished(false);
        bytes.resize(prefix + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        if (bytes.size() == needed) {
            woken = false;
            continue;
        }
        // Woken without a byte more: the client closed after a partial hello.
        if (woken && bytes.size() <= had && peer_closed(socket)) co_return unfinished(false);

        low_water.raise_to(needed - prefix);
        auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
        if (watchdog.expired()) co_return unfinished(true);
        if (ec) co_return unfinished(false);
        woken = true;
    }
}

}  // namespace vaultgate::net
