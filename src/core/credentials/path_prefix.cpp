// Path prefix coverage: a path is compared textually with a prefix only once
// it is known that no origin reads it as another path.
#include "vaultgate/credentials/path_prefix.hpp"

#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/json_text.hpp"  // is_valid_utf8

#include <string>

namespace vaultgate {

namespace {

// Escaped forms of these are what traversal through a decoding origin is
// made of: a separator or dot that the prefix check did not see, a path
// parameter, or a second round of decoding ("%252e").
bool is_structural_byte(unsigned char c) {
    return c == '.' || c == '/' || c == '\\' || c == ';' || c == '%' || c < 0x20 || c == 0x7f;
}

// Some servers trim spaces around a segment (Spring's trimTokens) or treat
// "..." like "..": a segment of dots, with spaces around, counts as a dot segment.
bool is_dot_segment(std::string_view segment) {
    while (!segment.empty() && segment.front() == ' ') segment.remove_prefix(1);
    while (!segment.empty() && segment.back() == ' ') segment.remove_suffix(1);
    return !segment.empty() && segment.find_first_not_of('.') == std::string_view::npos;
}

bool has_dot_segment(std::string_view decoded) {
    std::size_t start = 0;
    for (;;) {
        const std::size_t slash = decoded.find('/', start);
        if (is_dot_segment(decoded.substr(start, slash == std::string_view::npos ? slash : slash - start))) return true;
        if (slash == std::string_view::npos) return false;
        start = slash + 1;
    }
}

}  // namespace

bool is_plain_path(std::string_view path) {
    path = path.substr(0, path.find('?'));
    std::string decoded;  // what an origin reads once it has decoded the escapes
    decoded.reserve(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) {
        const char c = path[i];
        // ';' starts a path parameter (Tomcat, Spring drop it), '\\' is a
        // separator on Windows origins, '#' a fragment that has no place here.
        if (c == ';' || c == '\\' || c == '#') return false;
        if (c != '%') {
            decoded += c;
            continue;
        }
        // A malformed escape may be IIS's "%u002e", or decoded by some other rule.
        const auto escaped = percent_escape_at(path, i);
        if (!escaped || is_structural_byte(*escaped)) return false;
        decoded += static_cast<char>(*escaped);
        i += 2;
    }
    // Lax decoders read overlong forms ("%c0%ae") as '.' or '/'; raw bytes
    // that are not UTF-8 are refused for the same reason.
    if (!is_valid_utf8(decoded)) return false;
    for (const char c : decoded)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    return !has_dot_segment(decoded);
}

bool path_has_prefix(std::string_view path, std::string_view prefix) {
    // Only the path is compared; a query string belongs to no prefix.
    path = path.substr(0, path.find('?'));
    // Whatever an origin makes of the path, it stays under "/".
    if (prefix == "/") return true;
    if (prefix.empty() || !path.starts_with(prefix)) return false;
    if (path.size() != prefix.size() && prefix.back() != '/' && path[prefix.size()] != '/') return false;
    return is_plain_path(path);
}

}  // namespace vaultgate
