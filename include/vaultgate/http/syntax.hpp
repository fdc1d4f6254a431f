#pragma once
// Byte classes and field-line syntax shared by the head parser and the chunked
// decoder. Header lines and trailer lines must be judged by one set of rules:
// two slightly different validators are exactly what request smuggling feeds on.
// Private to src/core; not part of the public interface.
#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>

namespace vaultgate::syntax {

inline constexpr std::size_t npos = std::string_view::npos;

// Index of the first `c` in `s`, or npos. Wraps memchr so that an empty view
// (whose data() may be null) never reaches it.
inline std::size_t find_byte(std::string_view s, char c) {
    if (s.empty()) return npos;
    const void* p = std::memchr(s.data(), c, s.size());
    return p == nullptr ? npos : static_cast<std::size_t>(static_cast<const char*>(p) - s.data());
}

// Index of the first CR or LF in `s`, or npos.
inline std::size_t find_cr_or_lf(std::string_view s) {
    const std::size_t lf = find_byte(s, '\n');
    const std::size_t cr = find_byte(s.substr(0, lf == npos ? s.size() : lf), '\r');
    return cr != npos ? cr : lf;
}

enum CharClass : unsigned char {
    tchar = 1,        // RFC 9110 token character
    field_char = 2,   // allowed inside a field value: HTAB, SP, VCHAR, obs-text
    target_char = 4,  // allowed in a request-target: visible ASCII only
};

inline constexpr std::array<unsigned char, 256> char_classes = [] {
    std::array<unsigned char, 256> t{};
    for (std::size_t c = 0x21; c < 0x7f; ++c) t[c] |= field_char | target_char;
    for (std::size_t c = 0x80; c < 0x100; ++c) t[c] |= field_char;
    t['\t'] |= field_char;
    t[' '] |= field_char;
    for (std::size_t c = '0'; c <= '9'; ++c) t[c] |= tchar;
    for (std::size_t c = 'a'; c <= 'z'; ++c) t[c] |= tchar;
    for (std::size_t c = 'A'; c <= 'Z'; ++c) t[c] |= tchar;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] |= tchar;
    return t;
}();

inline bool all_of_class(std::string_view s, CharClass cls) {
    for (char c : s)
        if ((char_classes[static_cast<unsigned char>(c)] & cls) == 0) return false;
    return true;
}

inline bool is_token(std::string_view s) { return !s.empty() && all_of_class(s, tchar); }

inline bool is_ows(char c) { return c == ' ' || c == '\t'; }

inline std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

struct FieldLine {
    std::string_view name;
    std::string_view value;  // OWS-trimmed
};

// Parses one field line (without its CRLF; the caller has already refused CR
// and LF inside it). Returns nullptr on success, else a fixed reason.
inline const char* parse_field_line(std::string_view line, FieldLine& out) {
    // A continuation line would be folded into the previous value by some
    // parsers and taken as a new field by others; refuse it outright.
    if (!line.empty() && is_ows(line.front())) return "obs-fold line";
    const std::size_t colon = find_byte(line, ':');
    if (colon == npos) return "header line without colon";
    const std::string_view name = line.substr(0, colon);
    if (name.empty()) return "empty header name";
    // "Transfer-Encoding : chunked" is the classic desync vector.
    if (is_ows(name.back())) return "whitespace before colon";
    if (!all_of_class(name, tchar)) return "invalid character in header name";
    const std::string_view value = trim_ows(line.substr(colon + 1));
    if (!all_of_class(value, field_char)) return "invalid character in header value";
    out.name = name;
    out.value = value;
    return nullptr;
}

// Calls `fn(element)` for every non-empty, OWS-trimmed element of a
// comma-separated field value (RFC 9110 section 5.6.1).
template <typename Fn>
void for_each_list_element(std::string_view value, Fn&& fn) {
    while (true) {
        const std::size_t comma = find_byte(value, ',');
        const std::string_view element = trim_ows(value.substr(0, comma));
        if (!element.empty()) fn(element);
        if (comma == npos) return;
        value.remove_prefix(comma + 1);
    }
}

}  // namespace vaultgate::syntax
