#include "cli/commands/terminal_secret.hpp"

#include "cli/commands.hpp"
#include "vaultgate/util/secret.hpp"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <stdexcept>

namespace vaultgate::cli {

namespace {

constexpr std::size_t max_line = std::size_t{64} << 10;
constexpr int restoring_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Read by the signal handler, so plain globals set before echo goes off.
struct termios saved_terminal;
volatile std::sig_atomic_t echo_is_off = 0;

void restore_terminal() {
    if (echo_is_off) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_terminal);
    echo_is_off = 0;
}

extern "C" void restore_and_die(int sig) {
    restore_terminal();  // tcsetattr is async-signal-safe
    const char newline = '\n';
    [[maybe_unused]] auto written = ::write(STDERR_FILENO, &newline, 1);
    std::signal(sig, SIG_DFL);
    ::raise(sig);
}

// Echo off for its lifetime; the previous handlers come back with the echo.
class EchoOff {
public:
    EchoOff() {
        if (::tcgetattr(STDIN_FILENO, &saved_terminal) != 0)
            throw std::runtime_error(std::string("reading the terminal settings: ") + std::strerror(errno));
        struct sigaction action {};
        action.sa_handler = restore_and_die;
        sigemptyset(&action.sa_mask);
        for (std::size_t i = 0; i < std::size(restoring_signals); ++i)
            ::sigaction(restoring_signals[i], &action, &previous_[i]);
        struct termios quiet = saved_terminal;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        quiet.c_lflag |= ECHONL;  // the Enter key still moves to a new line
        echo_is_off = 1;
        if (::tcsetattr(STDIN_FILENO, TCSANOW, &quiet) != 0) {
            echo_is_off = 0;
            restore_handlers();
            throw std::runtime_error(std::string("turning off the terminal's echo: ") + std::strerror(errno));
        }
    }
    ~EchoOff() {
        restore_terminal();
        restore_handlers();
    }
    EchoOff(const EchoOff&) = delete;
    EchoOff& operator=(const EchoOff&) = delete;

private:
    void restore_handlers() {
        for (std::size_t i = 0; i < std::size(restoring_signals); ++i)
            ::sigaction(restoring_signals[i], &previous_[i], nullptr);
    }
    struct sigaction previous_[std::size(restoring_signals)]{};
};

}  // namespace

bool stdin_is_terminal() { return ::isatty(STDIN_FILENO) == 1; }

std::string read_secret_from_terminal(const std::string& prompt) {
    std::string line;
    line.reserve(max_line + 1);
    {
        // Echo goes off before the prompt shows: what is typed once it is
        // visible is never echoed.
        EchoOff echo_off;
        std::fputs(prompt.c_str(), stderr);
        std::fflush(stderr);
        char c = 0;
        for (;;) {
            const ssize_t n = ::read(STDIN_FILENO, &c, 1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                wipe_string(line);
                throw std::runtime_error(std::string("reading the terminal: ") + std::strerror(errno));
            }
            if (n == 0 || c == '\n') break;
            if (line.size() == max_line) {
                wipe_string(line);
                throw UsageError("the value typed is longer than 64 KiB; use --value-file F");
            }
            line.push_back(c);
        }
        c = 0;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
}

}  // namespace vaultgate::cli
