#pragma once
// Reading what a process or a log wrote: a whole file, and counting lines
// that mention something.
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>

namespace vaultgate::test {

// How many times `needle` occurs in `text` (overlapping ones included).
inline std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

// The whole content of a text file ("" when it cannot be read).
inline std::string read_text_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace vaultgate::test
