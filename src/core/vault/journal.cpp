// Reading and appending the journal. Record layout: length of the sealed part
// (4 bytes, big endian) | nonce (12) | ciphertext | tag (16); the header and
// the length are the additional data, so a record cannot be moved to another
// journal or have its length changed.
#include "journal.hpp"

#include "atomic_file.hpp"
#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/ids.hpp"
#include "vaultgate/state/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace vaultgate {

namespace {

constexpr std::array<unsigned char, 8> journal_magic = {'V', 'G', 'J', 'O', 'U', 'R', 'N', '\0'};
constexpr unsigned char journal_version = 1;
constexpr std::size_t header_nonce_offset = journal_magic.size() + 1;
constexpr std::size_t record_length_size = 4;
constexpr std::size_t sealed_overhead = gcm_nonce_size + gcm_tag_size;
// As the snapshot's cap: a journal is compacted before it outgrows the snapshot.
constexpr std::size_t max_journal_bytes = std::size_t{256} << 20;
constexpr std::size_t max_record_bytes = std::size_t{16} << 20;

void put_big_endian(unsigned char* out, std::uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i, value >>= 8) out[i] = static_cast<unsigned char>(value);
}

std::uint64_t get_big_endian(const unsigned char* in, int bytes) {
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value = (value << 8) | in[i];
    return value;
}

bool write_all_at(int fd, const unsigned char* p, std::size_t n, std::size_t offset) {
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= static_cast<std::size_t>(w);
        offset += static_cast<std::size_t>(w);
    }
    return true;
}

}  // namespace

Journal::Journal(std::string path, const DerivedKey& key) : path_(std::move(path)), key_(key) {}

void Journal::fail(const std::string& what) const { throw StoreError(path_ + ": " + what); }

Journal::Header Journal::header_for(const unsigned char* snapshot_nonce, std::uint64_t generation) const {
    Header h{};
    std::memcpy(h.data(), journal_magic.data(), journal_magic.size());
    h[journal_magic.size()] = journal_version;
    std::memcpy(h.data() + header_nonce_offset, snapshot_nonce, gcm_nonce_size);
    put_big_endian(h.data() + header_nonce_offset + gcm_nonce_size, generation, 8);
    return h;
}

JournalRead Journal::read(const unsigned char* snapshot_nonce) const {
    JournalRead out;
    auto read = read_store_file(path_, O_NOFOLLOW | O_NONBLOCK, max_journal_bytes, "journal");
    if (!read) return out;
    const WipedBytes& file = *read;
    const unsigned char* p = file.data();
    const std::size_t size = file.size();
    if (std::memcmp(p, journal_magic.data(), std::min(size, journal_magic.size())) != 0)
        fail("not a vaultgate store journal");
    // start() writes the header whole, through a rename: a short one was never
    // a journal of this store's.
    if (size < journal_header_size) {
        out.ignored = "the journal has no whole header (" + std::to_string(size) + " bytes)";
        return out;
    }
    if (p[journal_magic.size()] != journal_version)
        fail("unsupported journal format version " + std::to_string(p[journal_magic.size()]) +
             " (this vaultgate reads version " + std::to_string(journal_version) + ")");
    if (std::memcmp(p + header_nonce_offset, snapshot_nonce, gcm_nonce_size) != 0) {
        out.ignored = "the journal follows an earlier snapshot (a compaction was cut short); its changes are "
                      "in the snapshot";
        return out;
    }
    out.belongs = true;
    std::memcpy(out.header.data(), p, journal_header_size);

    std::size_t pos = journal_header_size;
    while (pos < size) {
        const std::size_t left = size - pos;
        if (left < record_length_size) break;
        const std::size_t length = get_big_endian(p + pos, record_length_size);
        if (length > left - record_length_size) break;  // cut short
        if (length < sealed_overhead || length > max_record_bytes) {
            // Zeros where a crash left the file longer than what reached the disk.
            if (std::all_of(p + pos, p + size, [](unsigned char c) { return c == 0; })) break;
            fail("damaged journal: a record of impossible length at offset " + std::to_string(pos));
        }
        unsigned char aad[journal_header_size + record_length_size];
        std::memcpy(aad, p, journal_header_size);
        std::memcpy(aad + journal_header_size, p + pos, record_length_size);
        const unsigned char* sealed = p + pos + record_length_size;
        const std::size_t data_size = length - sealed_overhead;
        WipedBytes plain(data_size);
        const GcmInput in{aad, sizeof aad, sealed + gcm_nonce_size, data_size};
        if (!gcm_open(key_, sealed, in, sealed + gcm_nonce_size + data_size, plain.data())) {
            const bool last = pos + record_length_size + length == size;
            if (last) break;  // its bytes did not all reach the disk
            fail("wrong master key or damaged journal (a record at offset " + std::to_string(pos) +
                 " fails authentication)");
        }
        out.records.push_back(std::move(plain));
        pos += record_length_size + length;
    }
    out.whole_end = pos;
    out.torn_bytes = size - pos;
    return out;
}

void Journal::resume(const JournalRead& read_result) {
    UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) fail("cannot open for appending: " + errno_text());
    if (read_result.torn_bytes > 0) {
        // New records must follow whole ones, or the next read stops at the tear.
        if (::ftruncate(fd.get(), static_cast<off_t>(read_result.whole_end)) != 0 || ::fdatasync(fd.get()) != 0)
            fail("cannot cut off the torn last record: " + errno_text());
    }
    header_ = read_result.header;
    fd_ = std::move(fd);
    end_ = read_result.whole_end;
}

void Journal::start(const unsigned char* snapshot_nonce, std::uint64_t generation) {
    close();
    header_ = header_for(snapshot_nonce, generation);
    remove_stale_temps(path_);
    replace_file(path_, header_.data(), header_.size());
    UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) fail("cannot open for appending: " + errno_text());
    fd_ = std::move(fd);
    end_ = header_.size();
}

void Journal::append(const WipedBytes& plain) {
    if (!open()) fail("the journal is not open");
    if (plain.size() > max_record_bytes - sealed_overhead) fail("a change is too large to save");
    const std::size_t length = sealed_overhead + plain.size();
    WipedBytes record(record_length_size + length);
    unsigned char* r = record.data();
    put_big_endian(r, length, record_length_size);
    unsigned char aad[journal_header_size + record_length_size];
    std::memcpy(aad, header_.data(), journal_header_size);
    std::memcpy(aad + journal_header_size, r, record_length_size);
    unsigned char* nonce = r + record_length_size;
    random_bytes(nonce, gcm_nonce_size);
    const GcmInput in{aad, sizeof aad, plain.data(), plain.size()};
    if (!gcm_seal(key_, nonce, in, nonce + gcm_nonce_size, nonce + gcm_nonce_size + plain.size()))
        fail("encryption failed: " + openssl_errors());
    if (!write_all_at(fd_.get(), record.data(), record.size(), end_) || ::fdatasync(fd_.get()) != 0) {
        const std::string reason = errno_text();
        // Best effort: a later read would stop at the tear anyway.
        if (::ftruncate(fd_.get(), static_cast<off_t>(end_)) != 0) close();
        fail("cannot append a change: " + reason);
    }
    end_ += record.size();
}

}  // namespace vaultgate
