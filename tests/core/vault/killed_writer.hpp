#pragma once
// A writer killed mid-write, for the crash tests of the file store: a child
// process writes over and over, acknowledging each write through a pipe; the
// parent waits for a number of acknowledgements, spins a short while so that
// the kill lands anywhere within the next write, and sends SIGKILL.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <stdexcept>

namespace vaultgate::store_test {

struct KilledWriter {
    int acknowledged = 0;  // writes the child finished before the kill
    bool killed = false;   // false: the child ended by itself (`status`)
    int status = 0;
};

// `writer` runs in the child and calls `ack` after each whole write; it
// should never return. The child exits 3 when `writer` throws.
inline KilledWriter kill_writer_mid_write(const std::function<void(const std::function<void()>& ack)>& writer,
                                          int acknowledgements, std::chrono::microseconds spin) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::close(fds[0]);
        const std::function<void()> ack = [&] {
            const char done = 1;
            if (::write(fds[1], &done, 1) != 1) ::_exit(0);
        };
        try {
            writer(ack);
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(4);
    }
    ::close(fds[1]);
    KilledWriter out;
    while (out.acknowledged < acknowledgements) {
        char c;
        const auto n = ::read(fds[0], &c, 1);
        if (n == 1) ++out.acknowledged;
        if (n == 0) break;  // the child ended on its own: reported in `killed`
    }
    for (const auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < spin;) {}
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &out.status, 0);
    ::close(fds[0]);
    out.killed = WIFSIGNALED(out.status);
    return out;
}

}  // namespace vaultgate::store_test
