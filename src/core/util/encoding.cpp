#include "vaultgate/util/encoding.hpp"

#include "vaultgate/util/secret.hpp"

#include <cstdint>

namespace vaultgate {

namespace {

constexpr std::string_view standard_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view url_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

}  // namespace

void append_base64(std::string& out, std::string_view in, Base64Alphabet which, bool pad) {
    const std::string_view alphabet = which == Base64Alphabet::url ? url_alphabet : standard_alphabet;
    out.reserve(out.size() + base64_size(in.size()));
    std::size_t i = 0;
    for (; i + 3 <= in.size(); i += 3) {
        const std::uint32_t n = std::uint32_t(std::uint8_t(in[i])) << 16 | std::uint32_t(std::uint8_t(in[i + 1])) << 8 |
                                std::uint32_t(std::uint8_t(in[i + 2]));
        out += alphabet[n >> 18 & 63];
        out += alphabet[n >> 12 & 63];
        out += alphabet[n >> 6 & 63];
        out += alphabet[n & 63];
    }
    const std::size_t rest = in.size() - i;
    if (rest > 0) {
        std::uint32_t n = std::uint32_t(std::uint8_t(in[i])) << 16;
        if (rest == 2) n |= std::uint32_t(std::uint8_t(in[i + 1])) << 8;
        out += alphabet[n >> 18 & 63];
        out += alphabet[n >> 12 & 63];
        if (rest == 2) out += alphabet[n >> 6 & 63];
        if (pad) out.append(3 - rest, '=');
    }
}

std::string base64_encode(std::string_view in, Base64Alphabet alphabet, bool pad) {
    std::string out;
    append_base64(out, in, alphabet, pad);
    return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
    std::size_t padding = 0;
    while (!in.empty() && in.back() == '=' && padding < 2) {
        in.remove_suffix(1);
        ++padding;
    }
    if (in.size() % 4 == 1) return std::nullopt;
    if (padding > 0 && (in.size() + padding) % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(in.size() * 3 / 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : in) {
        const auto pos = standard_alphabet.find(c);
        if (pos == std::string_view::npos) {
            wipe_string(out);
            return std::nullopt;
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(pos);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    return out;
}

std::optional<unsigned char> percent_escape_at(std::string_view in, std::size_t at) {
    if (at + 2 >= in.size() || in[at] != '%') return std::nullopt;
    const int hi = hex_digit_value(in[at + 1]);
    const int lo = hex_digit_value(in[at + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    return static_cast<unsigned char>(hi * 16 + lo);
}

bool is_unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

namespace {

// Percent-encoding and form encoding differ only in the space.
std::size_t escaped_size(std::string_view in, bool space_as_plus) {
    std::size_t n = 0;
    for (const char c : in) n += is_unreserved(static_cast<unsigned char>(c)) || (space_as_plus && c == ' ') ? 1 : 3;
    return n;
}

void append_escaped(std::string& out, std::string_view in, bool upper_hex, bool space_as_plus) {
    const char* digits = upper_hex ? "0123456789ABCDEF" : "0123456789abcdef";
    out.reserve(out.size() + escaped_size(in, space_as_plus));
    for (const char ch : in) {
        const auto c = static_cast<unsigned char>(ch);
        if (is_unreserved(c)) {
            out += ch;
        } else if (space_as_plus && c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += digits[c >> 4];
            out += digits[c & 15];
        }
    }
}

}  // namespace

std::size_t percent_encoded_size(std::string_view in) { return escaped_size(in, false); }

void append_percent_encoded(std::string& out, std::string_view in, bool upper_hex) {
    append_escaped(out, in, upper_hex, false);
}

std::size_t form_encoded_size(std::string_view in) { return escaped_size(in, true); }

void append_form_encoded(std::string& out, std::string_view in) { append_escaped(out, in, true, true); }

std::string percent_encode(std::string_view in, bool upper_hex) {
    std::string out;
    append_percent_encoded(out, in, upper_hex);
    return out;
}

std::string hex_encode(std::string_view in, bool upper_hex) {
    const char* digits = upper_hex ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    out.reserve(2 * in.size());
    for (const char ch : in) {
        const auto c = static_cast<unsigned char>(ch);
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

}  // namespace vaultgate
