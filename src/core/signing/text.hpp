#pragma once
// Small text helpers shared by the SigV4 files. Private to src/core/signing.
#include "vaultgate/util/encoding.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace vaultgate::sigv4 {

inline std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    return out;
}

inline std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Percent-decodes; a '%' that starts no valid escape stays a literal '%'.
// '+' is a literal plus: AWS's encoders never write it for a space.
inline std::string percent_decoded(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (const std::optional<unsigned char> b = percent_escape_at(in, i)) {
            out += static_cast<char>(*b);
            i += 2;
        } else {
            out += in[i];
        }
    }
    return out;
}

}  // namespace vaultgate::sigv4
