// LISTEN on a connection of its own, in a thread that sleeps in poll() on
// the connection's socket and a pipe that wakes it to stop.
#include "pg_connection.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/pgstore/pg_store.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace vaultgate {

struct PgChangeListener::Impl {
    std::string url;
    std::function<void()> on_change;
    std::chrono::milliseconds fallback;
    int wake[2] = {-1, -1};
    std::atomic<bool> stopping = false;
    std::thread thread;

    // Waits up to `timeout` for the socket (or none, -1) or the stop pipe.
    // Returns true when the socket is readable.
    bool wait(int socket, std::chrono::milliseconds timeout) {
        pollfd fds[2] = {{wake[0], POLLIN, 0}, {socket, POLLIN, 0}};
        const int n = ::poll(fds, socket >= 0 ? 2 : 1, static_cast<int>(timeout.count()));
        return n > 0 && socket >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR));
    }

    void changed() {
        try {
            on_change();
        } catch (...) {
            // The callback reports its own failures; the loop goes on.
        }
    }

    // One connection's life: LISTEN, then announcements until it breaks.
    // `connected` is set once LISTEN is in place.
    void listen_once(bool& connected) {
        auto conn = pg::connect(url);
        pg::Result listening(PQexec(conn.get(), (std::string("LISTEN ") + pg_change_channel).c_str()));
        if (PQresultStatus(listening.get()) != PGRES_COMMAND_OK) throw StoreUnavailable("database: LISTEN failed");
        connected = true;
        log_info("store: listening for changes from other replicas");
        changed();  // what happened while not listening
        const int socket = PQsocket(conn.get());
        while (!stopping) {
            if (!wait(socket, fallback)) {
                if (!stopping) changed();  // a lost notification is read now
                continue;
            }
            if (PQconsumeInput(conn.get()) != 1)
                throw StoreUnavailable("database: the change listener lost its connection");
            bool any = false;
            while (PGnotify* n = PQnotifies(conn.get())) {
                any = true;
                PQfreemem(n);
            }
            if (any) changed();
        }
    }

    void run() {
        const std::chrono::milliseconds first_pause(250), longest_pause(5000);
        auto pause = first_pause;
        bool reported = false;
        while (!stopping) {
            bool connected = false;
            try {
                listen_once(connected);
                return;
            } catch (const StoreError& e) {
                if (connected) pause = first_pause, reported = false;
                if (!reported) log_warn(std::string("store: ") + e.what() + "; reconnecting with backoff");
                reported = true;
            }
            changed();  // marks the store unavailable, or reads what it can
            wait(-1, pause);
            pause = std::min(pause * 2, longest_pause);
        }
    }
};

PgChangeListener::PgChangeListener(std::string url, std::function<void()> on_change, std::chrono::milliseconds fallback)
    : impl_(std::make_unique<Impl>()) {
    impl_->url = std::move(url);
    impl_->on_change = std::move(on_change);
    impl_->fallback = fallback;
    if (::pipe2(impl_->wake, O_CLOEXEC) != 0) throw StoreError("store: cannot create a pipe for the change listener");
    impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

PgChangeListener::~PgChangeListener() {
    impl_->stopping = true;
    const char byte = 0;
    [[maybe_unused]] auto ignored = ::write(impl_->wake[1], &byte, 1);
    impl_->thread.join();
    ::close(impl_->wake[0]);
    ::close(impl_->wake[1]);
}

}  // namespace vaultgate
