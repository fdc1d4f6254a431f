#pragma once
// A listener whose accept queue is full: connects to it neither succeed nor
// fail, as to a host that drops packets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace vaultgate::test {

// A listener on ip:port whose accept queue is full: it drops every further
// SYN, so a connect to it neither succeeds nor fails. Port 0 picks one.
class Blackhole {
public:
    // With `listen` false the port is only bound: nobody else can listen
    // there, and a connect is refused at once.
    Blackhole(const char* ip, std::uint16_t port, bool listen = true) {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        ::inet_pton(AF_INET, ip, &addr.sin_addr);
        socklen_t len = sizeof addr;
        ok_ = listener_ >= 0 && ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
              ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
              (!listen || ::listen(listener_, 0) == 0);
        port_ = ntohs(addr.sin_port);
        for (int i = 0; ok_ && listen && i < 3; ++i) {
            fillers_.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
            ::connect(fillers_.back(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        }
    }
    Blackhole(const Blackhole&) = delete;
    Blackhole& operator=(const Blackhole&) = delete;
    ~Blackhole() {
        for (int fd : fillers_) ::close(fd);
        if (listener_ >= 0) ::close(listener_);
    }
    bool ok() const { return ok_; }
    std::uint16_t port() const { return port_; }

private:
    int listener_ = -1;
    bool ok_ = false;
    std::uint16_t port_ = 0;
    std::vector<int> fillers_;
};

}  // namespace vaultgate::test
