#pragma once
// The request log of SPEC.md: one JSON object per line. Entries carry names,
// sizes and outcomes only; there is no field for a header value, a query string
// or a body, so none can be logged.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate {

struct AccessLogEntry {
    std::chrono::system_clock::time_point ts;
    std::string session;
    std::string vault;      // empty -> omitted
    std::string service;    // empty -> omitted
    std::string ingress;    // mitm | tunnel | http | denied
    std::string method;     // empty for tunnels -> "CONNECT"
    std::string host;
    std::uint16_t port = 0;
    std::string path;       // query string is stripped by the setter below
    int status = 0;
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
    double ms = 0;
    std::string reason;     // denied/failure reason, empty -> omitted
    std::string client;     // client address (ip), empty -> omitted

    // Keeps only the path: cuts at '?' or '#'.
    void set_path(std::string_view target);
};

std::string to_json_line(const AccessLogEntry& e);  // without the trailing newline

// Writes lines to stdout or a file (appending), and keeps the last `ring_size`
// entries for the admin API. Thread-safe.
class AccessLog {
public:
    explicit AccessLog(const std::string& destination, std::size_t ring_size = 10000);
    ~AccessLog();
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    void write(const AccessLogEntry& e);
    std::vector<AccessLogEntry> recent(std::size_t limit) const;

private:
    std::FILE* out_ = nullptr;
    bool owns_ = false;
    std::size_t ring_size_;
    mutable std::mutex mutex_;
    std::deque<AccessLogEntry> ring_;
};

}  // namespace vaultgate
