// The request log: one JSON object per line, keys in the order of
// docs/reference/access-log.md.
#include "vaultgate/observe/access_log.hpp"

#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/util/json_text.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace vaultgate {

namespace {

// "2026-11-29T19:00:00.123Z": UTC, millisecond precision. Returns a view of
// `buf`.
std::string_view format_timestamp(std::chrono::system_clock::time_point tp, char (&buf)[64]) {
    using namespace std::chrono;
    const auto ms_since_epoch = floor<milliseconds>(tp.time_since_epoch()).count();
    // floor, not truncation, so that instants before 1970 still get 0-999 ms.
    std::time_t secs = static_cast<std::time_t>(ms_since_epoch / 1000);
    long long millis = ms_since_epoch % 1000;
    if (millis < 0) {
        millis += 1000;
        --secs;
    }
    // The date and time of day change once a second; every line of that second
    // reuses this thread's last formatting of them.
    thread_local std::time_t cached_secs = -1;
    thread_local char cached[32];
    thread_local std::size_t cached_len = 0;
    if (secs != cached_secs) {
        std::tm tm{};
        gmtime_r(&secs, &tm);
        cached_len = std::strftime(cached, sizeof cached, "%Y-%m-%dT%H:%M:%S", &tm);
        cached_secs = secs;
    }
    std::memcpy(buf, cached, cached_len);
    char* p = buf + cached_len;
    *p++ = '.';
    *p++ = static_cast<char>('0' + millis / 100);
    *p++ = static_cast<char>('0' + millis / 10 % 10);
    *p++ = static_cast<char>('0' + millis % 10);
    *p++ = 'Z';
    return std::string_view(buf, static_cast<std::size_t>(p - buf));
}

// "stdout", or the file appended to (created when missing).
int open_destination(const std::string& destination) {
    if (destination == "stdout") return STDOUT_FILENO;
    // The log names hosts and sessions; not for every local user to read.
    int fd = ::open(destination.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) throw std::runtime_error("cannot open access log " + destination + ": " + std::strerror(errno));
    return fd;
}

double round_tenth(double ms) { return std::round(ms * 10.0) / 10.0; }

}  // namespace

void AccessLogEntry::set_path(std::string_view target) {
    // Absolute-form ("http://user:pw@host/p"): drop scheme and authority, which
    // may carry userinfo.
    if (auto scheme_end = target.find("://");
        scheme_end != std::string_view::npos && target.find_first_of("/?#") > scheme_end) {
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

void append_json_line(std::string& out, const AccessLogEntry& e) {
    // Written by hand, not through a JSON library: this runs once per request
    // on the I/O threads, and the key order is fixed by the log format anyway.
    const auto key = [&out](std::string_view name) {
        if (out.back() != '{') out.push_back(',');
        out.push_back('"');
        out.append(name);
        out.append("\":");
    };
    const auto text = [&](std::string_view name, std::string_view value) {
        key(name);
        append_json_string(out, value);
    };
    const auto number = [&](std::string_view name, auto value) {
        key(name);
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
        out.append(buf, end);
    };
    out.push_back('{');
    char ts[64];
    text("ts", format_timestamp(e.ts, ts));
    text("session", e.session);
    if (!e.vault.empty()) text("vault", e.vault);
    if (!e.service.empty()) text("service", e.service);
    if (!e.credential.empty()) text("credential", e.credential);
    text("ingress", e.ingress);
    text("method", e.method.empty() ? std::string_view("CONNECT") : std::string_view(e.method));
    text("host", e.host);
    number("port", e.port);
    text("path", e.path);
    number("status", e.status);
    number("bytes_up", e.bytes_up);
    number("bytes_down", e.bytes_down);
    key("ms");
    char ms[64];
    auto [ms_end, ms_ec] =
        std::to_chars(ms, ms + sizeof ms, round_tenth(std::isfinite(e.ms) ? e.ms : 0.0), std::chars_format::fixed, 1);
    // Only an absurd value (over 60 digits) fails to fit; the line stays valid JSON.
    if (ms_ec == std::errc())
        out.append(ms, ms_end);
    else
        out.append("0.0");
    if (!e.reason.empty()) text("reason", e.reason);
    if (!e.client.empty()) text("client", e.client);
    if (!e.proto.empty()) text("proto", e.proto);
    out.push_back('}');
}

std::string to_json_line(const AccessLogEntry& e) {
    std::string out;
    out.reserve(320);
    append_json_line(out, e);
    return out;
}

namespace {

constexpr std::size_t flush_batch_bytes = 64 * 1024;

// Writes as much of `data` as the destination takes, retrying short writes
// and interruptions, and waiting on a destination opened non-blocking (a pipe
// to a log collector) for as long as it keeps taking bytes: it gives up only
// after 5 s without progress. Returns how many bytes went out; errno says why
// not all did.
std::size_t write_fully(int fd, std::string_view data) {
    std::size_t written = 0;
    int waits_without_progress = 0;
    while (written < data.size()) {
        ssize_t n = ::write(fd, data.data() + written, data.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && waits_without_progress++ < 50) {
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, 100);
            continue;
        }
        if (n <= 0) {
            if (n == 0) errno = EIO;
            break;
        }
        written += static_cast<std::size_t>(n);
        waits_without_progress = 0;
    }
    return written;
}

}  // namespace

AccessLog::AccessLog(const std::string& destination, std::size_t ring_size, std::chrono::milliseconds flush_interval,
                     std::size_t max_pending_bytes)
    : destination_(destination),
      ring_size_(ring_size),
      flush_interval_(flush_interval),
      max_pending_bytes_(max_pending_bytes) {
    fd_ = open_destination(destination);
    owns_fd_ = fd_ != STDOUT_FILENO;
    pending_.reserve(flush_batch_bytes * 2);
    flusher_ = std::jthread([this](std::stop_token stop) { run_flusher(std::move(stop)); });
}

AccessLog::~AccessLog() {
    flusher_.request_stop();
    if (flusher_.joinable()) flusher_.join();
    flush();
    if (owns_fd_) ::close(fd_);
}

void AccessLog::write(const AccessLogEntry& e) {
    // Formatted before the lock, into this thread's buffer, which keeps its capacity.
    thread_local std::string line;
    line.clear();
    append_json_line(line, e);
    line.push_back('\n');

    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (pending_.size() + line.size() > max_pending_bytes_) {
            ++dropped_;
        } else {
            // Wake the flusher for the first line of a batch (it then waits
            // flush_interval) and when a batch is full (it writes at once).
            wake = pending_.empty() ||
                   (pending_.size() < flush_batch_bytes && pending_.size() + line.size() >= flush_batch_bytes);
            pending_.append(line);
        }
        if (ring_size_ > 0) {
            if (ring_.size() < ring_size_) {
                ring_.push_back(e);
            } else {
                ring_[ring_next_] = e;
                ring_next_ = (ring_next_ + 1) % ring_size_;
            }
        }
    }
    if (wake) wake_flusher_.notify_one();
}

void AccessLog::run_flusher(std::stop_token stop) {
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
        if (!wake_flusher_.wait(lock, stop, [this] { return !pending_.empty(); })) break;
        // Let the batch gather, unless it is already large.
        wake_flusher_.wait_for(lock, stop, flush_interval_, [this] { return pending_.size() >= flush_batch_bytes; });
        lock.unlock();
        flush();
        lock.lock();
    }
}

void AccessLog::flush() {
    std::lock_guard write_lock(write_mutex_);
    std::uint64_t newly_dropped = 0;
    {
        std::lock_guard lock(mutex_);
        writing_.swap(pending_);
        newly_dropped = dropped_ - dropped_reported_;
        dropped_reported_ = dropped_;
    }
    std::uint64_t lost = 0;  // lines the destination refused (full disk, closed pipe)
    int write_error = 0;
    if (!writing_.empty()) {
        const std::size_t written = write_fully(fd_, writing_);
        if (written < writing_.size()) {
            write_error = errno;
            // A line cut short counts as lost; it ends at the next newline.
            lost = static_cast<std::uint64_t>(
                std::count(writing_.begin() + static_cast<std::ptrdiff_t>(written), writing_.end(), '\n'));
        }
    }
    writing_.clear();
    if (lost > 0) {
        {
            std::lock_guard lock(mutex_);
            dropped_ += lost;
            dropped_reported_ += lost;
        }
        log_warn("access log: " + std::to_string(lost) + " lines lost writing to " + destination_ + ": " +
                 std::strerror(write_error));
    }
    if (newly_dropped > 0)
        log_warn("access log: " + std::to_string(newly_dropped) +
                 " lines dropped because the log destination is not keeping up");
}

void AccessLog::reopen(const std::string& destination) {
    const int fd = open_destination(destination);
    flush();
    std::lock_guard write_lock(write_mutex_);
    if (owns_fd_) ::close(fd_);
    fd_ = fd;
    owns_fd_ = fd != STDOUT_FILENO;
    destination_ = destination;
}

std::uint64_t AccessLog::dropped_lines() const {
    std::lock_guard lock(mutex_);
    return dropped_;
}

std::vector<AccessLogEntry> AccessLog::recent(std::size_t limit) const {
    std::lock_guard lock(mutex_);
    const std::size_t n = std::min(limit, ring_.size());
    std::vector<AccessLogEntry> out;
    out.reserve(n);
    // Oldest first: when the ring is full, the oldest entry is at ring_next_.
    const std::size_t oldest = ring_.size() < ring_size_ ? 0 : ring_next_;
    for (std::size_t i = ring_.size() - n; i < ring_.size(); ++i) out.push_back(ring_[(oldest + i) % ring_.size()]);
    return out;
}

}  // namespace vaultgate
