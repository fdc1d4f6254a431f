#pragma once
// The request log (docs/reference/access-log.md): one JSON object per line.
// Entries carry names, sizes and outcomes only; there is no field for a header
// value, a query string or a body, so none can be logged.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace vaultgate {

struct AccessLogEntry {
    std::chrono::system_clock::time_point ts;
    std::string session;
    std::string vault;    // empty -> omitted
    std::string service;  // empty -> omitted
    // The auth type applied to the request ("bearer", "aws-sigv4", ...), never
    // a value; empty -> omitted (nothing was injected).
    std::string credential;
    std::string ingress;  // mitm | tunnel | http | denied
    std::string method;   // empty for tunnels -> "CONNECT"
    std::string host;
    std::uint16_t port = 0;
    std::string path;  // query string is stripped by the setter below
    int status = 0;
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
    double ms = 0;
    std::string reason;  // denied/failure reason, empty -> omitted
    std::string client;  // client address (ip), empty -> omitted
    // The HTTP version of a request inside an intercepted or plain-HTTP
    // connection: "h1" or "h2"; empty -> omitted (tunnels, CONNECT refusals).
    std::string proto;

    // Keeps only the path: cuts at '?' or '#'.
    void set_path(std::string_view target);
};

std::string to_json_line(const AccessLogEntry& e);                 // without the trailing newline
void append_json_line(std::string& out, const AccessLogEntry& e);  // the same, appended to `out`

// Writes lines to stdout or a file (appending), and keeps the last `ring_size`
// entries for the admin API. Thread-safe.
//
// Lines are written in batches, like nginx's `access_log ... flush=`: a worker
// only appends to a buffer in memory, and a background thread writes the buffer
// at most `flush_interval` after its first line (sooner once it holds 64 KiB).
// A request therefore never waits for the log's disk or pipe. If the sink falls
// so far behind that `max_pending_bytes` are waiting, further lines are dropped,
// counted, and reported on the diagnostic log, rather than stalling traffic;
// lines a failing destination refuses (a full disk) are counted and reported
// the same way.
class AccessLog {
public:
    static constexpr std::chrono::milliseconds default_flush_interval{100};
    static constexpr std::size_t default_max_pending_bytes = 8u << 20;

    explicit AccessLog(const std::string& destination, std::size_t ring_size = 10000,
                       std::chrono::milliseconds flush_interval = default_flush_interval,
                       std::size_t max_pending_bytes = default_max_pending_bytes);
    ~AccessLog();  // writes every pending line
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    void write(const AccessLogEntry& e);
    void flush();  // writes the pending lines now
    // Writes the pending lines, then sends further ones to `destination`
    // ("stdout" or a path, opened anew even when it is the same one, which is
    // how a rotated file is let go). Throws std::runtime_error, changing
    // nothing, when it cannot be opened.
    void reopen(const std::string& destination);
    std::vector<AccessLogEntry> recent(std::size_t limit) const;
    // Lines dropped because the destination fell too far behind, or lost
    // because writing them failed (both are reported on the diagnostic log).
    std::uint64_t dropped_lines() const;

private:
    void run_flusher(std::stop_token stop);

    std::string destination_;  // "stdout" or the path, for messages (under write_mutex_)
    int fd_ = -1;
    bool owns_fd_ = false;
    std::size_t ring_size_;
    std::chrono::milliseconds flush_interval_;
    std::size_t max_pending_bytes_;

    mutable std::mutex mutex_;  // pending_, ring_, dropped_
    std::condition_variable_any wake_flusher_;
    std::string pending_;
    std::uint64_t dropped_ = 0;
    std::uint64_t dropped_reported_ = 0;
    // A circular buffer: slots are assigned over, so their strings keep their
    // capacity and a full ring takes no allocation per entry.
    std::vector<AccessLogEntry> ring_;
    std::size_t ring_next_ = 0;

    std::mutex write_mutex_;  // one batch on the wire at a time, in order
    std::string writing_;     // the batch being written; keeps its capacity
    std::jthread flusher_;    // last: started after everything it uses
};

}  // namespace vaultgate
