#pragma once
// Whole-file replacement for the store and its generation record: after a
// crash a path holds the old or the new bytes, never a mix; and the bounded
// read of a store file.
#include "vaultgate/util/wiped_bytes.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vaultgate {

// strerror(errno), for messages.
std::string errno_text();

// Replaces `path` whole: a temp file beside it (random name, O_EXCL, never
// through a link, mode 0600), fsync, rename, fsync of the directory. Throws
// StoreError naming `path`.
void replace_file(const std::string& path, const unsigned char* bytes, std::size_t size);

// The whole regular file at `path`, opened with O_RDONLY | O_CLOEXEC |
// `extra_flags`; nullopt when it does not exist. Anything else that keeps it
// from being read (a directory in the way, a permission, more than `limit`
// bytes: "not a vaultgate <kind>") throws StoreError naming `path`.
std::optional<WipedBytes> read_store_file(const std::string& path, int extra_flags, std::size_t limit,
                                          std::string_view kind);

// Removes the temp files replace_file left beside `path` when their writer
// died mid-save. Best effort: a failure here must not stop the save itself.
void remove_stale_temps(const std::string& path);

}  // namespace vaultgate
