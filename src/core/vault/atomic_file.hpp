#pragma once
// Whole-file replacement for the store and its generation record: after a
// crash a path holds the old or the new bytes, never a mix.
#include <cstddef>
#include <string>

namespace vaultgate {

// strerror(errno), for messages.
std::string errno_text();

// Replaces `path` whole: a temp file beside it (random name, O_EXCL, never
// through a link, mode 0600), fsync, rename, fsync of the directory. Throws
// StoreError naming `path`.
void replace_file(const std::string& path, const unsigned char* bytes, std::size_t size);

// Removes the temp files replace_file left beside `path` when their writer
// died mid-save. Best effort: a failure here must not stop the save itself.
void remove_stale_temps(const std::string& path);

}  // namespace vaultgate
