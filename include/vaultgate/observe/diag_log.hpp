#pragma once
// Operational messages (startup, reloads, failures) on stderr, one line each:
// "2026-11-29T19:00:00.123Z warn message". Callers pass fixed text and
// normalised names only; never a header value, a body or a secret.
#include <exception>
#include <string_view>

namespace vaultgate {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void set_log_level(LogLevel level);
bool parse_log_level(std::string_view text, LogLevel& out);
bool log_enabled(LogLevel level);
void log_line(LogLevel level, std::string_view message);

inline void log_error(std::string_view m) { log_line(LogLevel::error, m); }
inline void log_warn(std::string_view m) { log_line(LogLevel::warn, m); }
inline void log_info(std::string_view m) { log_line(LogLevel::info, m); }
inline void log_debug(std::string_view m) {
    if (log_enabled(LogLevel::debug)) log_line(LogLevel::debug, m);
}

// An error line "<context>: <what()>" for an exception a coroutine ended with
// (nothing when `e` is null).
void log_exception(std::string_view context, std::exception_ptr e);

}  // namespace vaultgate
