#include "vaultgate/observe/diag_log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace vaultgate {

namespace {
std::atomic<int> current_level{static_cast<int>(LogLevel::info)};
std::mutex write_mutex;

const char* level_name(LogLevel l) {
    switch (l) {
        case LogLevel::error:
            return "error";
        case LogLevel::warn:
            return "warn";
        case LogLevel::info:
            return "info";
        case LogLevel::debug:
            return "debug";
    }
    return "info";
}
}  // namespace

void set_log_level(LogLevel level) { current_level = static_cast<int>(level); }

bool parse_log_level(std::string_view text, LogLevel& out) {
    for (auto l : {LogLevel::error, LogLevel::warn, LogLevel::info, LogLevel::debug}) {
        if (text == level_name(l)) {
            out = l;
            return true;
        }
    }
    return false;
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) <= current_level.load(std::memory_order_relaxed); }

void log_line(LogLevel level, std::string_view message) {
    if (!log_enabled(level)) return;
    auto now = std::chrono::system_clock::now();
    auto secs = std::chrono::system_clock::to_time_t(now);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[40];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    std::string line;
    line.reserve(message.size() + 48);
    line.append(stamp).append(" ").append(level_name(level)).append(" ").append(message).append("\n");
    std::lock_guard lock(write_mutex);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

void log_exception(std::string_view context, std::exception_ptr e) {
    if (!e) return;
    std::string line(context);
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        line.append(": ").append(ex.what());
    } catch (...) {
        line.append(": an exception of unknown type");
    }
    log_error(line);
}

}  // namespace vaultgate
