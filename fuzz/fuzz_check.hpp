#pragma once
// Invariant checks for the fuzz targets. A broken invariant aborts, which
// libFuzzer reports like any crash and saves the input as a reproducer; a plain
// assert() would vanish in a release build, and the fuzz build is RelWithDebInfo.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace vaultgate::fuzz {

[[noreturn]] inline void invariant_failed(const char* expr, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, expr);
    std::abort();
}

// Error texts go into responses and logs, so they must be short fixed prose:
// printable ASCII only means no CR/LF/NUL or raw client bytes can ride along.
inline bool is_plain_reason(std::string_view s, std::size_t max_len = 120) {
    if (s.empty() || s.size() > max_len) return false;
    for (char c : s)
        if (c < 0x20 || c > 0x7e) return false;
    return true;
}

inline std::string_view as_view(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace vaultgate::fuzz

#define FUZZ_CHECK(cond) \
    ((cond) ? static_cast<void>(0) : ::vaultgate::fuzz::invariant_failed(#cond, __FILE__, __LINE__))
