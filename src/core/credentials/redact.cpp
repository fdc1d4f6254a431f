#include "vaultgate/credentials/redact.hpp"

#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/json_text.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace vaultgate {

namespace {

// How JSON encoders write a string holding the secret, where that differs from
// the bytes themselves. Every encoder escapes '"' and '\\'. On top of that, by
// default: PHP writes '/' as "\\/" and every non-ASCII character as \\uXXXX
// (slash + non_ascii); Go writes '<', '>' and '&' as \\u003c, \\u003e and
// \\u0026, and U+2028 and U+2029 as \\u2028 and \\u2029 (html); Python
// writes every non-ASCII character as \\uXXXX (non_ascii), in UTF-16 code units.
struct JsonStyle {
    bool slash = false;
    bool html = false;
    bool non_ascii = false;
};

void append_u_escape(std::string& out, std::uint32_t unit, bool upper_hex) {
    const char* digits = upper_hex ? "0123456789ABCDEF" : "0123456789abcdef";
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += digits[unit >> shift & 15];
}

// The escaped form, or nothing when `s` is not valid UTF-8 (no encoder of
// text produces a form of it then). Reserved up front, as the other forms.
std::optional<std::string> json_escaped(std::string_view s, JsonStyle style, bool upper_hex) {
    if (!is_valid_utf8(s)) return std::nullopt;
    std::string out;
    out.reserve(s.size() * 12);
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c == '/' && style.slash) {
            out += "\\/";
            ++i;
        } else if ((c == '<' || c == '>' || c == '&') && style.html) {
            append_u_escape(out, c, upper_hex);
            ++i;
        } else if (c >= 0x80 && (style.non_ascii || style.html)) {
            // Valid UTF-8 (checked above): decode one code point.
            const std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
            std::uint32_t cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0f : 0x1f);
            for (std::size_t k = 1; k < len; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3f);
            if (!style.non_ascii && cp != 0x2028 && cp != 0x2029) {
                // Go escapes only the line and paragraph separators.
                out.append(s.substr(i, len));
            } else if (cp >= 0x10000) {
                cp -= 0x10000;
                append_u_escape(out, 0xd800 | cp >> 10, upper_hex);
                append_u_escape(out, 0xdc00 | (cp & 0x3ff), upper_hex);
            } else {
                append_u_escape(out, cp, upper_hex);
            }
            i += len;
        } else {
            out += static_cast<char>(c);
            ++i;
        }
    }
    return out;
}

template <class T>
void wipe_vector(std::vector<T>& v) noexcept {
    if (v.capacity() > 0) OPENSSL_cleanse(v.data(), v.capacity() * sizeof(T));
    v.clear();
}

// Shorter cores would match ordinary base64 text too often.
constexpr std::size_t min_embedded_base64_chars = 8;

// The characters of any base64 text that carries `raw` starting `offset` bytes
// (0, 1 or 2) into a 3-byte group that only raw's own bytes determine, so they
// are the same whatever surrounds it: character j covers bits [6j, 6j + 6) of
// the encoded bytes, and raw holds bits [8 * offset, 8 * (offset + size)).
std::string embedded_base64_core(std::string_view raw, std::size_t offset, Base64Alphabet alphabet) {
    std::string aligned(offset, '\0');
    aligned.append(raw);
    std::string encoded = base64_encode(aligned, alphabet, false);
    wipe_string(aligned);
    const std::size_t first = (8 * offset + 5) / 6;
    const std::size_t end = 8 * (offset + raw.size()) / 6;
    std::string core = end > first ? encoded.substr(first, end - first) : std::string();
    wipe_string(encoded);
    return core;
}

}  // namespace

struct RedactionPatterns::Hit {
    enum class Kind { none, match, pending };
    Kind kind = Kind::none;
    std::size_t pos = 0;  // match or pending: where; none: the limit
    std::size_t end = 0;  // match: end of the longest needle starting at pos
};

RedactionPatterns::RedactionPatterns(const std::vector<Secret>& secrets, std::string placeholder)
    : placeholder_(std::move(placeholder)) {
    if (placeholder_.empty()) throw std::invalid_argument("redaction placeholder is empty");

    std::vector<std::string> forms;
    // The vector never grows past what is reserved here (the most forms one
    // secret has, below, times the secrets): a reallocation would move short
    // strings and leave their bytes in the freed buffer. add_form refuses
    // rather than grow, so a form added below without raising this count fails
    // loudly in the tests instead of leaving copies.
    constexpr std::size_t max_forms_per_secret = 28;
    forms.reserve(secrets.size() * max_forms_per_secret);
    auto add_form = [&](std::string form) {
        if (forms.size() == forms.capacity()) {
            wipe_string(form);
            for (std::string& f : forms) wipe_string(f);
            throw std::logic_error("redaction: more forms than max_forms_per_secret");
        }
        forms.push_back(std::move(form));
        wipe_string(form);  // a short string is copied, not moved
    };
    auto add_json_form = [&](std::string_view text, JsonStyle style, bool upper_hex) {
        if (auto escaped = json_escaped(text, style, upper_hex)) add_form(std::move(*escaped));
    };
    for (const Secret& secret : secrets) {
        const std::string_view raw = secret.reveal();
        if (raw.empty()) continue;
        const std::size_t first = forms.size();
        add_form(std::string(raw));
        add_form(base64_encode(raw, Base64Alphabet::standard, true));
        add_form(base64_encode(raw, Base64Alphabet::standard, false));
        add_form(base64_encode(raw, Base64Alphabet::url, true));
        add_form(base64_encode(raw, Base64Alphabet::url, false));
        add_form(percent_encode(raw, true));
        add_form(percent_encode(raw, false));
        // Hex: how a server dumps bytes it does not take for text (a debug echo, a hash input).
        add_form(hex_encode(raw, false));
        add_form(hex_encode(raw, true));
        // Inside a JSON string. Standard base64 may hold '/', which PHP escapes;
        // the other forms hold nothing a JSON encoder changes.
        constexpr JsonStyle minimal{}, slash{.slash = true}, html{.html = true}, non_ascii{.non_ascii = true},
            php{.slash = true, .non_ascii = true};
        add_json_form(raw, minimal, false);
        add_json_form(raw, slash, false);
        for (const bool upper_hex : {false, true}) {
            add_json_form(raw, html, upper_hex);
            add_json_form(raw, non_ascii, upper_hex);
            add_json_form(raw, php, upper_hex);
        }
        add_json_form(forms[first + 1], slash, false);  // padded standard base64
        add_json_form(forms[first + 2], slash, false);  // unpadded standard base64
        // Inside a larger base64 text (a JSON document or a request dump encoded
        // whole): what the secret's own bytes determine, at each of the three
        // alignments it can have there.
        for (std::size_t offset = 0; offset < 3; ++offset) {
            for (const auto alphabet : {Base64Alphabet::standard, Base64Alphabet::url}) {
                std::string core = embedded_base64_core(raw, offset, alphabet);
                if (core.size() < min_embedded_base64_chars) {
                    wipe_string(core);
                    continue;
                }
                if (alphabet == Base64Alphabet::standard) add_json_form(core, slash, false);
                add_form(std::move(core));
                wipe_string(core);  // a short string is copied, not moved: its bytes stay here
            }
        }
    }
    // Sorting groups the needles by first byte, which check_at() relies on;
    // duplicates (secrets with nothing to escape, or listed twice) would only
    // cost time.
    std::sort(forms.begin(), forms.end());
    for (std::size_t i = 0; i < forms.size(); ++i) {
        if (i == 0 || forms[i] != forms[i - 1]) needles_.emplace_back(forms[i]);
    }
    // The candidate strings are plain std::strings: wipe them before they are freed.
    for (std::string& f : forms) wipe_string(f);

    if (needles_.empty()) return;

    first_index_.assign(257, 0);
    for (const Secret& n : needles_) ++first_index_[static_cast<unsigned char>(n.reveal()[0]) + 1];
    for (std::size_t c = 1; c < first_index_.size(); ++c) first_index_[c] += first_index_[c - 1];

    min_len_ = needles_.front().size();
    for (const Secret& n : needles_) {
        min_len_ = std::min(min_len_, n.size());
        max_len_ = std::max(max_len_, n.size());
    }

    // A skip table keyed by the last two bytes of a min_len_ window: in text
    // without matches most windows can jump almost min_len_ bytes, which is what
    // makes the no-match case (nearly every response) fast. Two bytes rather
    // than one because single bytes of base64 needles are common in any text.
    block_ = min_len_ >= 2 ? 2 : 1;
    const std::size_t max_shift = std::min<std::size_t>(min_len_ - block_ + 1, 255);
    shift_.assign(block_ == 2 ? 65536 : 256, static_cast<std::uint8_t>(max_shift));
    for (const Secret& n : needles_) {
        const auto* b = reinterpret_cast<const unsigned char*>(n.reveal().data());
        for (std::size_t j = block_ - 1; j < min_len_; ++j) {
            const unsigned key = block_ == 2 ? (b[j - 1] << 8 | b[j]) : b[j];
            shift_[key] = static_cast<std::uint8_t>(std::min<std::size_t>(shift_[key], min_len_ - 1 - j));
        }
    }

    if (contains_secret(placeholder_)) {
        // The destructor does not run for a throwing constructor.
        wipe_vector(shift_);
        wipe_vector(first_index_);
        throw std::invalid_argument("redaction placeholder contains a secret it should replace");
    }
}

RedactionPatterns::~RedactionPatterns() {
    // The tables reveal which bytes and byte pairs the secrets contain.
    wipe_vector(shift_);
    wipe_vector(first_index_);
}

Redactor::Redactor(std::shared_ptr<const RedactionPatterns> patterns) : patterns_(std::move(patterns)) {
    if (!patterns_) throw std::invalid_argument("a Redactor needs patterns");
}

Redactor::Redactor(const std::vector<Secret>& secrets, std::string placeholder)
    : Redactor(std::make_shared<const RedactionPatterns>(secrets, std::move(placeholder))) {}

Redactor::Redactor(const Secret& secret, std::string placeholder)
    : Redactor(std::vector<Secret>{secret}, std::move(placeholder)) {}

Redactor::~Redactor() {
    wipe_string(held_);
    wipe_string(joined_);
}

// All needles starting at `pos`. Pending when, without `final`, some needle runs
// past the end of `data` and agrees with every byte there is: only more input
// can tell, and a shorter needle matching here must wait too, because the longer
// one would change where the redaction ends.
RedactionPatterns::Hit RedactionPatterns::check_at(std::string_view data, std::size_t pos, bool final) const {
    const auto c = static_cast<unsigned char>(data[pos]);
    const std::size_t avail = data.size() - pos;
    const char* at = data.data() + pos;
    std::size_t best = 0;
    bool pending = false;
    for (std::uint32_t i = first_index_[c]; i < first_index_[c + 1]; ++i) {
        const std::string_view n = needles_[i].reveal();
        if (n.size() <= avail) {
            if (n.size() > best && std::memcmp(at, n.data(), n.size()) == 0) best = n.size();
        } else if (!final && std::memcmp(at, n.data(), avail) == 0) {
            pending = true;
        }
    }
    if (pending) return {Hit::Kind::pending, pos, 0};
    if (best > 0) return {Hit::Kind::match, pos, pos + best};
    return {};
}

// The first position in [from, limit) where a needle matches or is pending.
// Worst case this is O(bytes x needle bytes), but that takes text that agrees
// with long stretches of a secret, which a sandbox cannot produce without
// already knowing it.
RedactionPatterns::Hit RedactionPatterns::find(std::string_view data, std::size_t from, std::size_t limit,
                                               bool final) const {
    const std::size_t n = data.size();
    const auto* d = reinterpret_cast<const unsigned char*>(data.data());
    std::size_t pos = from;
    if (n >= min_len_) {
        // Windows of min_len_ bytes that fit in data. A skipped position cannot
        // even partially match: the key bytes lie inside data and inside the
        // first min_len_ bytes of any needle that would start there.
        const std::size_t fast_end = std::min(limit, n - min_len_ + 1);
        const std::size_t key_offset = min_len_ - block_;
        if (block_ == 2) {
            while (pos < fast_end) {
                const unsigned char* k = d + pos + key_offset;
                const std::uint8_t s = shift_[k[0] << 8 | k[1]];
                if (s != 0) {
                    pos += s;
                    continue;
                }
                const Hit hit = check_at(data, pos, final);
                if (hit.kind != Hit::Kind::none) return hit;
                ++pos;
            }
        } else {
            while (pos < fast_end) {
                const std::uint8_t s = shift_[d[pos + key_offset]];
                if (s != 0) {
                    pos += s;
                    continue;
                }
                const Hit hit = check_at(data, pos, final);
                if (hit.kind != Hit::Kind::none) return hit;
                ++pos;
            }
        }
    }
    // Near the end no needle fits whole; only a pending prefix can be found.
    if (!final) {
        for (; pos < limit; ++pos) {
            const Hit hit = check_at(data, pos, final);
            if (hit.kind != Hit::Kind::none) return hit;
        }
    }
    return {Hit::Kind::none, limit, 0};
}

// Decides positions [pos, limit) of data, appending plain bytes and
// placeholders to out. Returns where it stopped: limit, or the first pending
// position. Bytes inside a region are dropped as they are passed.
std::size_t RedactionPatterns::scan(std::string_view data, std::size_t pos, std::size_t limit, bool final,
                                    ScanState& state, std::string& out) const {
    for (;;) {
        if (state.in_region) {
            if (pos >= state.region_end) {
                // Nothing that starts inside the region reaches past it: close it.
                // A match starting exactly here is a new, adjacent region.
                out += placeholder_;
                state.in_region = false;
                continue;
            }
            const std::size_t lim = std::min(state.region_end, limit);
            if (pos >= lim) return pos;
            const Hit hit = find(data, pos, lim, final);
            if (hit.kind == Hit::Kind::pending) return hit.pos;
            if (hit.kind == Hit::Kind::match) {
                state.region_end = std::max(state.region_end, hit.end);
                pos = hit.pos + 1;
            } else {
                pos = lim;
            }
        } else {
            if (pos >= limit) return pos;
            const Hit hit = find(data, pos, limit, final);
            out.append(data.substr(pos, hit.pos - pos));
            if (hit.kind != Hit::Kind::match) return hit.pos;
            state.in_region = true;
            state.region_end = hit.end;
            pos = hit.pos + 1;
        }
    }
}

void Redactor::hold(std::string_view data, std::size_t from) {
    held_.assign(data.substr(from));
    if (state_.in_region) state_.region_end -= from;
}

void Redactor::feed(std::string_view in, std::string& out) {
    const RedactionPatterns& p = *patterns_;
    if (p.needles_.empty()) {
        out.append(in);
        return;
    }
    if (in.empty()) return;

    if (!held_.empty()) {
        // Decide the held bytes with just enough of `in` behind them: every held
        // position then sees a full window of max_len_ bytes, and the bulk of
        // `in` is scanned in place rather than copied.
        const std::size_t h = held_.size();
        const std::size_t take = std::min(in.size(), p.max_len_ - 1);
        joined_.assign(held_);
        joined_.append(in.substr(0, take));
        const std::size_t stop = p.scan(joined_, 0, h, false, state_, out);
        if (stop < h) {
            // Only possible when `in` was too short to decide, so all of it is in joined_.
            assert(take == in.size());
            hold(joined_, stop);
            return;
        }
        if (state_.in_region) state_.region_end -= h;
    }
    const std::size_t stop = p.scan(in, 0, in.size(), false, state_, out);
    hold(in, stop);
}

void Redactor::finish(std::string& out) {
    if (!held_.empty() || state_.in_region) {
        patterns_->scan(held_, 0, held_.size(), true, state_, out);
    }
    wipe_string(held_);
    state_ = RedactionPatterns::ScanState{};
}

std::string RedactionPatterns::redact_all(std::string_view in) const {
    std::string out;
    if (needles_.empty()) {
        out.assign(in);
        return out;
    }
    out.reserve(in.size());
    ScanState state;
    scan(in, 0, in.size(), true, state, out);
    return out;
}

bool RedactionPatterns::contains_secret(std::string_view in) const {
    if (needles_.empty()) return false;
    return find(in, 0, in.size(), true).kind == Hit::Kind::match;
}

}  // namespace vaultgate
