// The encrypted file store: a snapshot, AES-256-GCM over the payload
// (payload_codec.hpp) with the file header as additional data, written by
// replace_file; and the journal of the changes made since (journal.hpp),
// which a compaction folds into a new snapshot once it outgrows the old one.
#include "vaultgate/vault/store.hpp"

#include "aes_gcm.hpp"
#include "atomic_file.hpp"
#include "journal.hpp"
#include "payload_codec.hpp"
#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/ids.hpp"
#include "vaultgate/crypto/key_derivation.hpp"
#include "vaultgate/observe/diag_log.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <utility>

namespace vaultgate {

namespace {

constexpr std::size_t nonce_size = gcm_nonce_size;
constexpr std::size_t tag_size = gcm_tag_size;
constexpr std::array<unsigned char, 8> magic = {'V', 'G', 'S', 'T', 'O', 'R', 'E', '\0'};
constexpr unsigned char format_version = 1;
constexpr std::size_t version_offset = magic.size();
constexpr std::size_t nonce_offset = version_offset + 1;
constexpr std::size_t length_offset = nonce_offset + nonce_size;
constexpr std::size_t header_size = length_offset + 8;
// A store holds vaults and sessions, kilobytes to a few megabytes. The cap keeps
// a wrong path (a disk image, a log) from being read whole, and keeps lengths
// within the int that EVP_*Update takes.
constexpr std::size_t max_store_bytes = std::size_t{256} << 20;
constexpr std::string_view store_key_info = "vaultgate store v1";
constexpr std::string_view journal_key_info = "vaultgate store journal v1";
// The journal is folded into a new snapshot once it is larger than the
// snapshot and than this: a change then costs, on average, about twice what
// it appends, and a start replays at most as much as it reads anyway.
constexpr std::size_t min_compaction_bytes = std::size_t{1} << 20;

using Nonce = std::array<unsigned char, nonce_size>;

class FileStore final : public VaultStore {
public:
    FileStore(std::string path, const Secret& master_key)
        : path_(std::move(path)), journal_(journal_path(path_), journal_key_) {
        try {
            require_master_key_size(master_key);
            derive_key(master_key.reveal(), store_key_info, key_);
            derive_key(master_key.reveal(), journal_key_info, journal_key_);
        } catch (const CryptoError& e) {
            throw StoreError(e.what());
        }
    }

    StoreData load() override {
        journal_.close();
        pending_journal_.reset();
        snapshot_present_ = false;
        // First run: nothing saved yet. Anything else (a permission, a
        // directory in the way) is an error, never an empty store.
        auto read = read_store_file(path_, 0, max_store_bytes, "store");
        if (!read) return {};
        const WipedBytes& file = *read;
        StoreData data = decrypt(file);
        snapshot_nonce_ = nonce_of(file.data());
        snapshot_size_ = file.size();
        snapshot_present_ = true;
        replay_journal(data);
        disk_generation_ = data.generation;
        return data;
    }

    void save(const StoreData& data) override {
        WipedBytes file = encrypt(data);
        remove_stale_temps(path_);
        journal_.close();
        pending_journal_.reset();
        replace_file(path_, file.data(), file.size());
        snapshot_nonce_ = nonce_of(file.data());
        snapshot_size_ = file.size();
        snapshot_present_ = true;
        disk_generation_ = data.generation;
        try {
            journal_.start(snapshot_nonce_.data(), data.generation);
        } catch (const StoreError& e) {
            // The data is saved whole; the next change writes a snapshot again.
            journal_.close();
            log_warn(std::string("store: ") + e.what() + "; the next change rewrites the store");
        }
    }

    // One record appended to the journal, unless the journal is due to be
    // folded in, or the store on disk is not the data `next` was made from
    // (a change that failed to save): the data is then saved whole.
    std::uint64_t apply(const StoreChange& change, const StoreData& next) override {
        if (!snapshot_present_ || next.generation != disk_generation_ + 1) {
            save(next);
            return next.generation;
        }
        WipedBytes record = encode_change_with_path(change, next);
        if (pending_journal_) {
            journal_.resume(*pending_journal_);
            pending_journal_.reset();
        }
        const std::size_t bound = std::max(snapshot_size_, min_compaction_bytes);
        if (!journal_.open() || journal_.size() + record.size() > bound) {
            save(next);
            return next.generation;
        }
        journal_.append(record);
        disk_generation_ = next.generation;
        return next.generation;
    }

    std::string describe() const override { return "encrypted file store " + path_; }

private:
    static std::string journal_path(const std::string& path) { return path + ".journal"; }

    static Nonce nonce_of(const unsigned char* file) {
        Nonce nonce;
        std::memcpy(nonce.data(), file + nonce_offset, nonce_size);
        return nonce;
    }

    // Applies the journal that follows the snapshot just read. A torn last
    // record (a crash mid-append: that change was never acknowledged) is
    // left out, and cut off before the next append.
    void replay_journal(StoreData& data) {
        JournalRead read = journal_.read(snapshot_nonce_.data());
        if (!read.belongs) {
            if (!read.ignored.empty()) log_warn("store: " + journal_path(path_) + ": " + read.ignored + "; ignored");
            return;
        }
        ChangeReplay replay(data);
        try {
            for (const auto& record : read.records) replay.apply(record.view());
            replay.finish();
        } catch (const PayloadError& e) {
            fail("damaged journal: " + e.message);
        }
        if (read.torn_bytes > 0)
            log_warn("store: " + journal_path(path_) + ": the last " + std::to_string(read.torn_bytes) +
                     " bytes are not a whole record (a write cut short by a crash); ignored");
        read.records.clear();
        pending_journal_ = std::move(read);
    }

    WipedBytes encode_change_with_path(const StoreChange& change, const StoreData& next) const {
        try {
            return encode_change(change, next);
        } catch (const PayloadError& e) {
            fail(e.message);
        }
    }

    [[noreturn]] void fail(const std::string& what) const { throw StoreError(path_ + ": " + what); }

    WipedBytes encrypt(const StoreData& data) const {
        WipedBytes plain = encode_with_path(data);
        if (plain.size() > max_store_bytes - header_size - tag_size) fail("the data is too large to save");

        WipedBytes file(header_size + plain.size() + tag_size);
        unsigned char* header = file.data();
        std::memcpy(header, magic.data(), magic.size());
        header[version_offset] = format_version;
        random_bytes(header + nonce_offset, nonce_size);
        std::uint64_t length = plain.size();
        for (int i = 7; i >= 0; --i, length >>= 8) header[length_offset + i] = static_cast<unsigned char>(length);

        const GcmInput in{header, header_size, plain.data(), plain.size()};
        if (!gcm_seal(key_, header + nonce_offset, in, file.data() + header_size,
                      file.data() + header_size + plain.size()))
            fail("encryption failed: " + openssl_errors());
        return file;
    }

    StoreData decrypt(const WipedBytes& file) const {
        const std::size_t size = file.size();
        const unsigned char* p = file.data();
        if (size == 0) fail("truncated: the file is empty (0 bytes)");
        // The magic first, so that another kind of file is named as such even
        // when it happens to be short.
        if (std::memcmp(p, magic.data(), std::min(size, magic.size())) != 0) fail("not a vaultgate store");
        if (size <= version_offset) fail(truncated(size, header_size + tag_size));
        if (p[version_offset] != format_version)
            fail("unsupported format version " + std::to_string(p[version_offset]) + " (this vaultgate reads version " +
                 std::to_string(format_version) + ")");
        if (size < header_size) fail(truncated(size, header_size + tag_size));
        std::uint64_t length = 0;
        for (std::size_t i = 0; i < 8; ++i) length = (length << 8) | p[length_offset + i];
        if (length > max_store_bytes) fail("wrong master key or damaged store (impossible payload length)");
        const std::size_t expected = header_size + static_cast<std::size_t>(length) + tag_size;
        if (size < expected) fail(truncated(size, expected));
        if (size > expected)
            fail("wrong master key or damaged store (" + std::to_string(size - expected) +
                 " unexpected bytes after the data)");

        WipedBytes plain(static_cast<std::size_t>(length));
        // The plaintext is not looked at before the tag is checked.
        const GcmInput in{p, header_size, p + header_size, static_cast<std::size_t>(length)};
        if (!gcm_open(key_, p + nonce_offset, in, p + header_size + length, plain.data()))
            fail("wrong master key or damaged store (authentication failed)");

        try {
            return decode_payload(plain.view());
        } catch (const PayloadError& e) {
            fail("damaged store: " + e.message);
        }
    }

    WipedBytes encode_with_path(const StoreData& data) const {
        try {
            return encode_payload(data);
        } catch (const PayloadError& e) {
            fail(e.message);
        }
    }

    static std::string truncated(std::size_t size, std::size_t expected) {
        return "truncated: " + std::to_string(size) + " bytes, expected " + std::to_string(expected);
    }

    std::string path_;
    DerivedKey key_;
    DerivedKey journal_key_;
    Journal journal_;
    std::optional<JournalRead> pending_journal_;  // read at load, opened for the first append
    bool snapshot_present_ = false;
    Nonce snapshot_nonce_{};
    std::size_t snapshot_size_ = 0;
    std::uint64_t disk_generation_ = 0;  // the generation the snapshot and journal hold
};

}  // namespace

std::unique_ptr<VaultStore> open_file_store(const std::string& path, const Secret& master_key) {
    if (path.empty()) throw StoreError("store.path is empty");
    return std::make_unique<FileStore>(path, master_key);
}

}  // namespace vaultgate
