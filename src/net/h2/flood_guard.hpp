#pragma once
// Counters for the frames an attacker can send at no cost to itself but not
// to the server (RFC 9113 section 10.5): SETTINGS, PING, PRIORITY, empty DATA,
// streams reset right after they opened (rapid reset, CVE-2023-44487), and
// CONTINUATION frames of one header block (CVE-2024-27316). Each kind has a
// bucket that holds `burst` frames and drains `per_second`; a kind that
// overflows its bucket ends the connection (GOAWAY ENHANCE_YOUR_CALM).
#include <chrono>
#include <cstddef>
#include <string_view>

namespace vaultgate::net::h2 {

enum class Flood { settings, ping, priority, empty_data, reset, continuation, count_ };

struct FloodLimits {
    double burst = 100;      // frames of one kind taken at once
    double per_second = 20;  // and afterwards, on average
    double reset_burst = 200;
    double reset_per_second = 50;
    std::size_t continuations = 32;  // CONTINUATION frames after one HEADERS
};

class FloodGuard {
public:
    using clock = std::chrono::steady_clock;
    explicit FloodGuard(const FloodLimits& limits) : limits_(limits) {}

    // Counts one frame of `kind`; true once the kind overflowed its bucket.
    bool exceeded(Flood kind, clock::time_point now = clock::now());
    // A header block: HEADERS, then CONTINUATION frames until END_HEADERS.
    void headers_started() { continuations_ = 0; }
    bool continuation_exceeded() { return ++continuations_ > limits_.continuations; }

    static std::string_view name(Flood kind);

private:
    struct Bucket {
        double level = 0;
        clock::time_point last{};
    };
    FloodLimits limits_;
    Bucket buckets_[static_cast<int>(Flood::count_)];
    std::size_t continuations_ = 0;
};

}  // namespace vaultgate::net::h2
