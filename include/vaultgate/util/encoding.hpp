#pragma once
// Byte encodings used on credentials: base64 (RFC 4648 sections 4 and 5) and
// the percent-encoding of RFC 3986. Writers append into a caller's string whose
// capacity they reserve first, so a secret is never left behind in a buffer
// the string abandons while growing.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vaultgate {

enum class Base64Alphabet { standard, url };

// Length of the padded encoding of n bytes.
constexpr std::size_t base64_size(std::size_t n) { return 4 * ((n + 2) / 3); }

void append_base64(std::string& out, std::string_view in, Base64Alphabet alphabet, bool pad);
std::string base64_encode(std::string_view in, Base64Alphabet alphabet, bool pad);

// Standard alphabet; padding optional but, when present, correct. nullopt on
// any other byte, so a key with a stray character is refused, not shortened.
std::optional<std::string> base64_decode(std::string_view in);

// The value of one hexadecimal digit (either case), or -1 for any other byte.
constexpr int hex_digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The byte the escape "%XX" at in[at] stands for, or nullopt when no escape
// starts there (no '%', or not two hex digits after it).
std::optional<unsigned char> percent_escape_at(std::string_view in, std::size_t at);

// RFC 3986 "unreserved": ALPHA / DIGIT / "-" / "." / "_" / "~".
bool is_unreserved(unsigned char c);
std::size_t percent_encoded_size(std::string_view in);
// Every byte outside "unreserved" as %XX, with upper- or lower-case hex digits.
void append_percent_encoded(std::string& out, std::string_view in, bool upper_hex = true);
std::string percent_encode(std::string_view in, bool upper_hex = true);
// application/x-www-form-urlencoded (RFC 6749 appendix B), as Python's
// quote_plus: "unreserved" as it is, a space as '+', every other byte as %XX.
std::size_t form_encoded_size(std::string_view in);
void append_form_encoded(std::string& out, std::string_view in);

// Every byte as two hex digits, upper- or lower-case (capacity reserved first).
std::string hex_encode(std::string_view in, bool upper_hex);

}  // namespace vaultgate
