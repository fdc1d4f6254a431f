#include "pg_server.hpp"

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace vaultgate::test {

namespace {

const std::string pg_bin = "/usr/lib/postgresql/15/bin/";
const std::string pg_password = "vaultgate-test-db-password";

// A port free now on 127.0.0.1 (the kernel's pick).
int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        throw std::runtime_error("cannot pick a port");
    ::close(fd);
    return ntohs(addr.sin_port);
}

// postgres runs as `nobody` when the tests run as root.
struct RunAs {
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
};

RunAs server_user() {
    RunAs as;
    if (::getuid() != 0) return as;
    const passwd* pw = ::getpwnam("nobody");
    if (!pw) throw std::runtime_error("no user 'nobody' to run postgres as");
    as.uid = pw->pw_uid;
    as.gid = pw->pw_gid;
    return as;
}

// Runs argv as the server user with stdout and stderr appended to `log`; its exit code.
int run_as_server(const std::vector<std::string>& argv, const std::string& log) {
    const RunAs as = server_user();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (out >= 0) {
            ::dup2(out, 1);
            ::dup2(out, 2);
        }
        if (::chdir(log.substr(0, log.rfind('/')).c_str()) != 0) ::_exit(125);
        if (::getuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(as.gid) != 0 || ::setuid(as.uid) != 0))
            ::_exit(126);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& content, mode_t mode) {
    std::ofstream(path, std::ios::trunc) << content;
    ::chmod(path.c_str(), mode);
}

}  // namespace

PgServer::PgServer() {
    if (!std::filesystem::exists(pg_bin + "initdb")) throw std::runtime_error(pg_bin + "initdb is not installed");
    std::string tmpl = (std::filesystem::temp_directory_path() / "vaultgate-pg-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    data_ = dir_ + "/data";
    log_ = dir_ + "/server.log";
    const RunAs as = server_user();
    // The server's own files: its directory, the password initdb reads, its log.
    if (::chown(dir_.c_str(), as.uid, as.gid) != 0) throw std::runtime_error("cannot hand " + dir_ + " to postgres");
    write_file(dir_ + "/password", pg_password + "\n", 0600);
    write_file(log_, "", 0600);
    if (::chown((dir_ + "/password").c_str(), as.uid, as.gid) != 0 || ::chown(log_.c_str(), as.uid, as.gid) != 0)
        throw std::runtime_error("cannot hand the password file to postgres");
    if (run_as_server({pg_bin + "initdb", "-D", data_, "-U", "vaultgate", "--pwfile=" + dir_ + "/password",
                       "--auth=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"},
                      log_) != 0)
        throw std::runtime_error("initdb failed: " + read_all(log_));
    port_ = free_port();
    // The client's password: a file of the test process (libpq wants 0600).
    const std::string passfile = dir_ + "/pgpass";
    write_file(passfile, "127.0.0.1:" + std::to_string(port_) + ":*:vaultgate:" + pg_password + "\n", 0600);
    ::setenv("PGPASSFILE", passfile.c_str(), 1);
    start();
}

PgServer::~PgServer() {
    if (running_) run_as_server({pg_bin + "pg_ctl", "-D", data_, "-m", "immediate", "-w", "stop"}, log_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

std::string PgServer::url() const { return "postgresql://vaultgate@127.0.0.1:" + std::to_string(port_) + "/postgres"; }

void PgServer::start() {
    const std::string options = "-p " + std::to_string(port_) + " -c listen_addresses=127.0.0.1 -k " + dir_ +
                                " -c fsync=off -c max_connections=50";
    if (run_as_server({pg_bin + "pg_ctl", "-D", data_, "-l", log_, "-w", "-t", "60", "-o", options, "start"}, log_) !=
        0)
        throw std::runtime_error("pg_ctl start failed: " + read_all(log_));
    running_ = true;
}

void PgServer::stop() {
    if (run_as_server({pg_bin + "pg_ctl", "-D", data_, "-m", "fast", "-w", "stop"}, log_) != 0)
        throw std::runtime_error("pg_ctl stop failed: " + read_all(log_));
    running_ = false;
}

std::string PgServer::psql(const std::string& sql) const {
    const std::string out = dir_ + "/psql.out";
    const pid_t pid = ::fork();
    if (pid == 0) {
        int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
        }
        const std::string bin = pg_bin + "psql";
        const std::string u = url();
        ::execl(bin.c_str(), bin.c_str(), "-X", "-A", "-t", "-d", u.c_str(), "-c", sql.c_str(), nullptr);
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return read_all(out);
}

}  // namespace vaultgate::test
