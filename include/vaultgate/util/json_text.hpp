#pragma once
// JSON text for the hot paths (the access log): appends to a caller's buffer,
// so a line costs no allocation once the buffer has grown.
#include <string>
#include <string_view>

namespace vaultgate {

// Appends `text` as a quoted JSON string. Quotes, backslashes and control
// characters are escaped; valid UTF-8 is kept as is; every byte that is not
// part of a valid UTF-8 sequence becomes U+FFFD, so the output is always valid
// JSON and valid UTF-8 whatever a sandbox sent.
// The output is at most 6 bytes per input byte, so a caller that must not
// leave a stray copy behind (a secret) can reserve enough capacity first.
void append_json_string(std::string& out, std::string_view text);

// True when every byte of `text` belongs to a valid UTF-8 sequence, i.e. when
// append_json_string would carry it without replacing anything.
bool is_valid_utf8(std::string_view text);

}  // namespace vaultgate
