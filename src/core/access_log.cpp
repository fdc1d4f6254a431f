// The request log: one JSON object per line, keys in the order SPEC.md shows.
#include "vaultgate/access_log.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace vaultgate {

namespace {

// "2026-11-29T19:00:00.123Z": UTC, millisecond precision.
std::string format_timestamp(std::chrono::system_clock::time_point tp) {
    using namespace std::chrono;
    const auto ms_since_epoch = floor<milliseconds>(tp.time_since_epoch()).count();
    // floor, not truncation, so that instants before 1970 still get 0-999 ms.
    std::time_t secs = static_cast<std::time_t>(ms_since_epoch / 1000);
    long long millis = ms_since_epoch % 1000;
    if (millis < 0) {
        millis += 1000;
        --secs;
    }
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(millis));
    return buf;
}

double round_tenth(double ms) { return std::round(ms * 10.0) / 10.0; }

}  // namespace

void AccessLogEntry::set_path(std::string_view target) {
    // Absolute-form ("http://user:pw@host/p"): drop scheme and authority, which
    // may carry userinfo.
    if (auto scheme_end = target.find("://"); scheme_end != std::string_view::npos &&
                                              target.find_first_of("/?#") > scheme_end) {
        std::string_view rest = target.substr(scheme_end + 3);
        auto path_start = rest.find_first_of("/?#");
        target = path_start == std::string_view::npos ? std::string_view("/") : rest.substr(path_start);
        if (!target.empty() && target.front() != '/') target = "/";
    } else if (!target.empty() && target.front() != '/' && target != "*") {
        // Authority-form (CONNECT host:port) has no path.
        target = {};
    }
    path.assign(target.substr(0, target.find_first_of("?#")));
}

std::string to_json_line(const AccessLogEntry& e) {
    nlohmann::ordered_json j;
    j["ts"] = format_timestamp(e.ts);
    j["session"] = e.session;
    if (!e.vault.empty()) j["vault"] = e.vault;
    if (!e.service.empty()) j["service"] = e.service;
    j["ingress"] = e.ingress;
    j["method"] = e.method.empty() ? std::string("CONNECT") : e.method;
    j["host"] = e.host;
    j["port"] = e.port;
    j["path"] = e.path;
    j["status"] = e.status;
    j["bytes_up"] = e.bytes_up;
    j["bytes_down"] = e.bytes_down;
    j["ms"] = round_tenth(e.ms);
    if (!e.reason.empty()) j["reason"] = e.reason;
    if (!e.client.empty()) j["client"] = e.client;
    // Host and path come from the sandbox and may hold invalid UTF-8; the
    // default handler would throw on the data path, so replace instead.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

AccessLog::AccessLog(const std::string& destination, std::size_t ring_size) : ring_size_(ring_size) {
    if (destination == "stdout") {
        out_ = stdout;
        return;
    }
    // The log names hosts and sessions; not for every local user to read.
    int fd = ::open(destination.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) throw std::runtime_error("cannot open access log " + destination + ": " + std::strerror(errno));
    out_ = ::fdopen(fd, "a");
    if (!out_) {
        int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot open access log " + destination + ": " + std::strerror(err));
    }
    owns_ = true;
}

AccessLog::~AccessLog() {
    if (owns_) std::fclose(out_);
}

void AccessLog::write(const AccessLogEntry& e) {
    // Formatting and copying happen before the lock; only the I/O is serialised.
    std::string line = to_json_line(e);
    line.push_back('\n');
    AccessLogEntry copy = e;

    std::lock_guard lock(mutex_);
    // A failing log sink must not fail the request; there is nowhere better to
    // report it from here, so write errors are ignored.
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
    if (ring_size_ == 0) return;
    ring_.push_back(std::move(copy));
    while (ring_.size() > ring_size_) ring_.pop_front();
}

std::vector<AccessLogEntry> AccessLog::recent(std::size_t limit) const {
    std::lock_guard lock(mutex_);
    const std::size_t n = std::min(limit, ring_.size());
    return std::vector<AccessLogEntry>(ring_.end() - static_cast<std::ptrdiff_t>(n), ring_.end());
}

}  // namespace vaultgate
