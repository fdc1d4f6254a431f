#pragma once
// Child processes: `vaultgate serve` itself, any command, and a plain HTTP
// client for its admin API.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vaultgate::test {

// `vaultgate serve` as a child process (the real binary, signals and all). The
// config should listen on port 0; the ports are read from the start-up line.
class ServeProcess {
public:
    // `max_files` > 0 lowers the child's RLIMIT_NOFILE before exec.
    // `wrapper`, when given, runs instead of the binary with the binary and the
    // config path as its last two arguments (e.g. to enter a mount namespace).
    ServeProcess(const std::string& config_path, const std::map<std::string, std::string>& env = {}, int max_files = 0,
                 const std::vector<std::string>& wrapper = {});
    int pid() const { return pid_; }
    long rss_kib() const;        // resident set of the child, from /proc
    double cpu_seconds() const;  // user + system CPU time of the child
    ~ServeProcess();
    bool started() const { return proxy_port_ != 0; }
    std::uint16_t proxy_port() const { return proxy_port_; }
    std::uint16_t admin_port() const { return admin_port_; }
    void signal(int sig);
    int wait_exit(int timeout_s = 30);  // exit code, or -1 on timeout
    std::string stderr_text();          // everything it wrote so far
    // A value (a credential the test hands the proxy through the admin API or
    // the bootstrapper) that must never appear in the proxy's stderr; checked
    // when this object goes, as the harness secret and the env values are.
    void forbid_in_stderr(std::string value) { forbidden_in_stderr_.push_back(std::move(value)); }

private:
    void read_stderr(int timeout_ms);
    int pid_ = -1;
    int err_fd_ = -1;
    std::string err_;
    std::vector<std::string> forbidden_in_stderr_;
    std::uint16_t proxy_port_ = 0, admin_port_ = 0;
    int exit_code_ = -1;
};

// A minimal HTTP client for the admin API (JSON bodies).
struct HttpResult {
    int status = 0;
    std::string head;
    std::string body;
};
HttpResult admin_request(std::uint16_t port, const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body = "");

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};
// Runs argv (no shell) with env additions; stdin from `input`.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input = "",
                          const std::map<std::string, std::string>& env = {}, int timeout_s = 60);

inline constexpr const char* serve_admin_token = "test-admin-token-0123456789abcdef";

}  // namespace vaultgate::test
