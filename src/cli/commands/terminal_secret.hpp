#pragma once
// A secret typed at a terminal: read with echo off. The terminal's settings
// come back on every way out: return, exception, and a signal that ends the
// process (SIGINT, SIGTERM, SIGHUP, SIGQUIT).
#include <string>

namespace vaultgate::cli {

bool stdin_is_terminal();

// Prints `prompt` on stderr, reads one line from stdin with echo off and
// returns it without its line ending (in a buffer that never reallocates, so
// no copy is left behind). A UsageError when the line is over 64 KiB.
std::string read_secret_from_terminal(const std::string& prompt);

}  // namespace vaultgate::cli
