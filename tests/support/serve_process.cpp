#include "serve_process.hpp"

#include "asio_types.hpp"
#include "harness.hpp"  // test_secret

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace vaultgate::test {

ServeProcess::ServeProcess(const std::string& config_path, const std::map<std::string, std::string>& env, int max_files,
                           const std::vector<std::string>& wrapper) {
    for (const auto& [name, value] : env)
        if (value.size() >= 8) forbidden_in_stderr_.push_back(value);
    int err_pipe[2];
    if (pipe(err_pipe)) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
        dup2(err_pipe[1], 2);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        close(err_pipe[0]);
        close(err_pipe[1]);
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        if (max_files > 0) {
            rlimit lim{static_cast<rlim_t>(max_files), static_cast<rlim_t>(max_files)};
            setrlimit(RLIMIT_NOFILE, &lim);
        }
        if (!wrapper.empty()) {
            std::vector<std::string> all = wrapper;
            all.push_back(VAULTGATE_BINARY);
            all.push_back(config_path);
            std::vector<char*> args;
            for (auto& a : all) args.push_back(a.data());
            args.push_back(nullptr);
            execvp(args[0], args.data());
            _exit(127);
        }
        execl(VAULTGATE_BINARY, VAULTGATE_BINARY, "serve", "--config", config_path.c_str(), nullptr);
        _exit(127);
    }
    close(err_pipe[1]);
    err_fd_ = err_pipe[0];
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        read_stderr(200);
        auto pos = err_.find("vaultgate listening: proxy ");
        if (pos != std::string::npos && err_.find('\n', pos) != std::string::npos) {
            auto line = err_.substr(pos, err_.find('\n', pos) - pos);
            auto port_after = [&](const std::string& key) -> std::uint16_t {
                auto k = line.find(key);
                if (k == std::string::npos) return 0;
                auto colon = line.find_first_of(' ', k + key.size());
                auto token = line.substr(k + key.size(), colon - k - key.size());
                auto c = token.rfind(':');
                return c == std::string::npos ? 0 : static_cast<std::uint16_t>(std::atoi(token.c_str() + c + 1));
            };
            proxy_port_ = port_after("proxy ");
            admin_port_ = port_after("admin ");
            return;
        }
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            pid_ = -1;
            read_stderr(100);
            return;
        }
    }
}

ServeProcess::~ServeProcess() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    // Whatever the test did, no credential reached the diagnostic log: the
    // harness's secret, and each value the test handed the process.
    read_stderr(0);
    EXPECT_EQ(err_.find(test_secret), std::string::npos) << "the secret reached stderr";
    for (const auto& value : forbidden_in_stderr_)
        EXPECT_EQ(err_.find(value), std::string::npos) << "a value the test handed the proxy reached stderr";
    // The binary's I/O threads reuse OpenSSL's buffers (block_cache.hpp).
    EXPECT_EQ(err_.find("OpenSSL allocations are not routed"), std::string::npos) << err_;
    if (err_fd_ >= 0) close(err_fd_);
}

void ServeProcess::read_stderr(int timeout_ms) {
    if (err_fd_ < 0) return;
    pollfd p{err_fd_, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
        char buf[4096];
        auto n = ::read(err_fd_, buf, sizeof buf);
        if (n <= 0) {
            close(err_fd_);
            err_fd_ = -1;
            return;
        }
        err_.append(buf, static_cast<std::size_t>(n));
        timeout_ms = 0;
    }
}

long ServeProcess::rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

double ServeProcess::cpu_seconds() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close_paren + 2));
    std::string field;
    // Fields after the command: state(3) ... utime(14) stime(15).
    std::vector<std::string> fields;
    while (rest >> field) fields.push_back(field);
    if (fields.size() < 13) return -1;
    return (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void ServeProcess::signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
}

int ServeProcess::wait_exit(int timeout_s) {
    if (pid_ <= 0) return exit_code_;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            pid_ = -1;
            read_stderr(100);
            return exit_code_;
        }
        read_stderr(50);
    }
    return -1;
}

std::string ServeProcess::stderr_text() {
    read_stderr(0);
    return err_;
}

HttpResult admin_request(std::uint16_t port, const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body) {
    asio::io_context ioc;
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
    if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
    if (!body.empty() || method == "POST" || method == "PUT")
        req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    asio::write(s, asio::buffer(req));
    std::string resp;
    boost::system::error_code ec;
    char buf[8192];
    for (;;) {
        auto n = s.read_some(asio::buffer(buf), ec);
        resp.append(buf, n);
        if (ec) break;
    }
    HttpResult r;
    auto end = resp.find("\r\n\r\n");
    if (end == std::string::npos) return r;
    r.head = resp.substr(0, end + 4);
    r.body = resp.substr(end + 4);
    r.status = std::atoi(r.head.c_str() + 9);
    return r;
}

// ---------------------------------------------------------------- run_command

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          const std::map<std::string, std::string>& env, int timeout_s) {
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (pipe(in_pipe) || pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    signal(SIGPIPE, SIG_IGN);
    if (!input.empty()) [[maybe_unused]]
        auto w = ::write(in_pipe[1], input.data(), input.size());
    close(in_pipe[1]);
    CommandResult r;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
        if (::poll(fds, 2, 200) <= 0) continue;
        for (auto& f : fds) {
            if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
            char buf[4096];
            auto n = ::read(f.fd, buf, sizeof buf);
            if (n <= 0) {
                close(f.fd);
                f.fd = -1;
                --open_fds;
            } else {
                (&f == &fds[0] ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    if (open_fds > 0) kill(pid, SIGKILL);
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

}  // namespace vaultgate::test
