// The encrypted file store: AES-256-GCM over the payload (payload_codec.hpp),
// with the file header as additional data, written by replace_file.
#include "vaultgate/vault/store.hpp"

#include "aes_gcm.hpp"
#include "atomic_file.hpp"
#include "payload_codec.hpp"
#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/crypto/ids.hpp"
#include "vaultgate/crypto/key_derivation.hpp"
#include "vaultgate/util/unique_fd.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

namespace vaultgate {

namespace {

using Fd = UniqueFd;

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

class FileStore final : public VaultStore {
public:
    FileStore(std::string path, const Secret& master_key) : path_(std::move(path)) {
        try {
            require_master_key_size(master_key);
            derive_key(master_key.reveal(), store_key_info, key_);
        } catch (const CryptoError& e) {
            throw StoreError(e.what());
        }
    }

    StoreData load() override {
        Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.get() < 0) {
            // First run: nothing saved yet. Anything else (a permission, a
            // directory in the way) is an error, never an empty store.
            if (errno == ENOENT) return {};
            fail("cannot open: " + errno_text());
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) fail("cannot stat: " + errno_text());
        if (!S_ISREG(st.st_mode)) fail("not a regular file");
        WipedBytes file;
        bool more = false;
        if (!read_up_to(fd.get(), file, max_store_bytes, more)) fail("cannot read: " + errno_text());
        if (more) fail("larger than " + std::to_string(max_store_bytes >> 20) + " MiB; not a vaultgate store");
        return decrypt(file);
    }

    void save(const StoreData& data) override {
        WipedBytes file = encrypt(data);
        remove_stale_temps(path_);
        replace_file(path_, file.data(), file.size());
    }

    std::string describe() const override { return "encrypted file store " + path_; }

private:
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
};

}  // namespace

std::unique_ptr<VaultStore> open_file_store(const std::string& path, const Secret& master_key) {
    if (path.empty()) throw StoreError("store.path is empty");
    return std::make_unique<FileStore>(path, master_key);
}

}  // namespace vaultgate
