#pragma once
// Response redaction: replaces every copy of a secret, in the encodings a server
// is likely to reflect it in, by a placeholder. Pure: no I/O. Streaming state is
// a hold-back of at most (longest needle - 1) bytes plus a scratch buffer of
// twice that, however long the body.
#include "vaultgate/util/secret.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

// For each secret, the needles are:
//   - the raw bytes;
//   - standard base64 (RFC 4648 section 4), with and without '=' padding;
//   - URL-safe base64 (section 5), with and without padding;
//   - inside a larger base64 text (either alphabet), where the secret may start
//     0, 1 or 2 bytes into a 3-byte group: for each alignment, the characters
//     only the secret's bytes determine (the ones just before and after mix in
//     its neighbours' bits and are left), when there are at least 8 of them;
//     also with "\/";
//   - the percent-encoding of every byte outside RFC 3986 "unreserved", once
//     with upper-case and once with lower-case hex digits;
//   - hex, every byte as two digits, once lower-case and once upper-case;
//   - the forms JSON encoders write inside a string by default: '"' and '\'
//     escaped (all of them); also '/' as "\/" and non-ASCII as \uXXXX (PHP,
//     each alone too; "\/" also in standard base64); '<', '>', '&', U+2028
//     and U+2029 as \u003c, \u003e, \u0026, \u2028, \u2029 (Go); non-ASCII
//     as \uXXXX (Python); \u escapes in lower- and upper-case hex.
// Forms that coincide are kept once. For basic auth, pass the injected
// "user:secret" string as an extra secret: its base64 is what a server echoes.
//
// Not covered: mixed-case hex in one percent-encoded or hex copy, '+' for space
// (form encoding), HTML entities, other combinations of those JSON styles,
// the base64 of a secret of 6 bytes or fewer inside a larger base64 text (too
// few characters are its own at some alignment), base64 wrapped into lines
// (MIME, PEM) with a line break inside the secret's characters, the base64 of
// another form (a base64-encoded request dump holds a basic-auth secret as
// base64 of its base64, a query-injected one percent-encoded), and compressed
// bodies (the proxy refuses those instead).
//
// There is no minimum length: a very short secret is still redacted, but then
// innocent text that happens to contain those bytes is replaced too (a 1-byte
// secret replaces every copy of that byte). That is the safe failure.
//
// Matches are found on the input, not on the output. Occurrences that overlap
// (share at least one byte) are replaced together by one placeholder;
// occurrences that merely touch get one placeholder each. Where several needles
// start at the same byte the longest one counts, so "c2VjcmV0==" loses its
// padding too. The result is the same however the input is split across feed()
// calls.
//
// The tables (RedactionPatterns) are immutable and built once per bound
// service when the gateway state is published; each response gets only a
// Redactor, the streaming state, which shares them.
class RedactionPatterns {
public:
    // Throws std::invalid_argument when the placeholder is empty (removing
    // bytes would splice the surrounding text together into new matches) or
    // contains a needle (the output would then carry the secret itself).
    // Empty secrets are skipped; with no needles left everything passes through.
    RedactionPatterns(const std::vector<Secret>& secrets, std::string placeholder);
    RedactionPatterns(const RedactionPatterns&) = delete;
    RedactionPatterns& operator=(const RedactionPatterns&) = delete;
    ~RedactionPatterns();

    // Whole-value redaction (header values).
    std::string redact_all(std::string_view in) const;
    // Whether any needle occurs in `in`.
    bool contains_secret(std::string_view in) const;

    const std::string& placeholder() const noexcept { return placeholder_; }
    std::size_t needle_count() const noexcept { return needles_.size(); }
    // Upper bound of a Redactor's held_bytes() between calls: longest needle - 1.
    std::size_t max_hold_back() const noexcept { return max_len_ > 0 ? max_len_ - 1 : 0; }

private:
    friend class Redactor;
    struct ScanState {
        bool in_region = false;      // inside a run of overlapping matches
        std::size_t region_end = 0;  // exclusive, relative to the buffer being scanned
    };
    struct Hit;

    Hit find(std::string_view data, std::size_t from, std::size_t limit, bool final) const;
    Hit check_at(std::string_view data, std::size_t pos, bool final) const;
    std::size_t scan(std::string_view data, std::size_t pos, std::size_t limit, bool final, ScanState& state,
                     std::string& out) const;

    // Sorted, so the needles starting with byte c are [first_index_[c], first_index_[c + 1]).
    std::vector<Secret> needles_;
    std::vector<std::uint32_t> first_index_;
    // Skip table over the last `block_` bytes of a window of min_len_ bytes:
    // how far the window may move before any needle could start in it.
    std::vector<std::uint8_t> shift_;
    std::size_t block_ = 1;
    std::size_t min_len_ = 0;
    std::size_t max_len_ = 0;
    std::string placeholder_;
};

// The streaming state of one response body. Not thread-safe for
// feed()/finish(); the patterns may be shared by any number of Redactors.
class Redactor {
public:
    explicit Redactor(std::shared_ptr<const RedactionPatterns> patterns);
    // Builds patterns of its own (see RedactionPatterns for what throws).
    Redactor(const std::vector<Secret>& secrets, std::string placeholder);
    Redactor(const Secret& secret, std::string placeholder);

    Redactor(const Redactor&) = delete;
    Redactor& operator=(const Redactor&) = delete;
    // Move construction only: a defaulted move assignment would free the old
    // stream buffers without wiping them.
    Redactor(Redactor&&) noexcept = default;
    Redactor& operator=(Redactor&&) = delete;
    ~Redactor();

    // Appends the redacted form of `in` to `out`. Bytes that could still be the
    // start of a match are held back until later input or finish() decides.
    void feed(std::string_view in, std::string& out);

    // End of stream: redacts and flushes the held-back tail, then resets so the
    // Redactor can be reused for the next message.
    void finish(std::string& out);

    // Whole-value redaction (header values); independent of the stream state.
    std::string redact_all(std::string_view in) const { return patterns_->redact_all(in); }
    bool contains_secret(std::string_view in) const { return patterns_->contains_secret(in); }

    const std::string& placeholder() const noexcept { return patterns_->placeholder(); }
    std::size_t needle_count() const noexcept { return patterns_->needle_count(); }
    std::size_t max_hold_back() const noexcept { return patterns_->max_hold_back(); }
    std::size_t held_bytes() const noexcept { return held_.size(); }

private:
    void hold(std::string_view data, std::size_t from);

    std::shared_ptr<const RedactionPatterns> patterns_;
    RedactionPatterns::ScanState state_;
    std::string held_;    // undecided tail of the stream, at most max_hold_back() bytes
    std::string joined_;  // held_ + the head of the next input, reused across feeds
};

}  // namespace vaultgate
