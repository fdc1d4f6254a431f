#pragma once
// The file store's journal, "<store>.journal": the changes made since the
// snapshot was written, one encrypted record each, appended and fdatasynced,
// so that a change costs what it writes and not what the store holds. The
// header names the snapshot (by its random nonce) the records follow; a
// journal of another snapshot (a compaction cut short between its two
// renames) holds nothing the snapshot lacks and is ignored. Layout in
// docs/reference/configuration.md, "store".
#include "aes_gcm.hpp"
#include "vaultgate/util/unique_fd.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vaultgate {

inline constexpr std::size_t journal_header_size = 8 + 1 + gcm_nonce_size + 8;

struct JournalRead {
    bool belongs = false;  // the journal follows the snapshot it was read for
    std::string ignored;   // why a journal present was not used, for a warning
    std::vector<WipedBytes> records;  // plaintexts, oldest first
    std::size_t whole_end = 0;        // the offset after the last whole record
    std::size_t torn_bytes = 0;       // bytes after it: a last append cut short
    std::array<unsigned char, journal_header_size> header{};
};

class Journal {
public:
    // Throws StoreError when the key cannot be derived.
    Journal(std::string path, const DerivedKey& key);

    // The records written after the snapshot with nonce `snapshot_nonce`. A
    // last record cut short (by a crash mid-append) is left out and counted in
    // torn_bytes; a damaged record with whole ones after it, or a file that
    // is not a journal, throws StoreError.
    JournalRead read(const unsigned char* snapshot_nonce) const;

    // Appends after `read_result.whole_end`, dropping a torn tail first.
    void resume(const JournalRead& read_result);
    // Replaces the journal with an empty one that follows the snapshot.
    void start(const unsigned char* snapshot_nonce, std::uint64_t generation);
    // Seals and appends one record, then fdatasync. On failure the file is cut
    // back to its last whole record and StoreError is thrown.
    void append(const WipedBytes& plain);

    bool open() const { return fd_.get() >= 0; }
    void close() { fd_ = UniqueFd(); }
    std::size_t size() const { return end_; }

private:
    using Header = std::array<unsigned char, journal_header_size>;
    static_assert(sizeof(Header) == sizeof(JournalRead::header));
    Header header_for(const unsigned char* snapshot_nonce, std::uint64_t generation) const;
    [[noreturn]] void fail(const std::string& what) const;

    std::string path_;
    const DerivedKey& key_;
    UniqueFd fd_;
    Header header_{};
    std::size_t end_ = 0;
};

}  // namespace vaultgate
