// The encrypted file store, master key loading, and the small primitives the
// admin API needs (ids, tokens, digests, fingerprints).
//
// Secret bytes pass through three kinds of buffer here: the JSON tree, the
// serialised JSON text, and the decrypted plaintext. Each is wiped before it is
// released, and the text buffers never reallocate without wiping the old block
// first. nlohmann's own scratch space (the parser's token buffer, the
// serialiser's 512-byte chunk buffer) is out of reach; credential values are
// base64 in the payload, so any remnant there is encoded, not raw.
#include "vaultgate/vault/store.hpp"
#include "vaultgate/util/json_wipe.hpp"
#include "vaultgate/crypto/openssl_owned.hpp"
#include "vaultgate/util/unique_fd.hpp"

#include "vaultgate/crypto/ca.hpp"  // openssl_errors()
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/config/json_codec.hpp"

#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <streambuf>
#include <utility>

namespace vaultgate {

namespace {

using nlohmann::json;

using CipherCtxPtr = Owned<EVP_CIPHER_CTX, EVP_CIPHER_CTX_free>;
using KdfPtr = Owned<EVP_KDF, EVP_KDF_free>;
using KdfCtxPtr = Owned<EVP_KDF_CTX, EVP_KDF_CTX_free>;
using MacPtr = Owned<EVP_MAC, EVP_MAC_free>;
using MacCtxPtr = Owned<EVP_MAC_CTX, EVP_MAC_CTX_free>;

constexpr std::size_t master_key_size = 32;
constexpr std::size_t key_size = 32;
constexpr std::size_t nonce_size = 12;
constexpr std::size_t tag_size = 16;
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
// A temp file left by a crashed writer is removed by a later save once its
// writer is gone and it is this old; the age guards against a pid from another
// pid namespace that only looks dead from here.
constexpr auto stale_temp_age = std::chrono::seconds(60);

constexpr std::string_view store_key_info = "vaultgate store v1";
constexpr std::string_view fingerprint_key_info = "vaultgate fingerprint v1";
constexpr std::string_view no_master_key =
    "no master key: set store.master_key_file, VAULTGATE_MASTER_KEY, or a systemd credential named master-key";

// --- buffers that are wiped when released ----------------------------------

class WipedBytes {
public:
    WipedBytes() = default;
    explicit WipedBytes(std::size_t n) {
        reserve(n);
        size_ = n;
    }
    WipedBytes(const WipedBytes&) = delete;
    WipedBytes& operator=(const WipedBytes&) = delete;
    // A move hands the block over whole; nothing is left behind to wipe.
    WipedBytes(WipedBytes&& other) noexcept
        : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)),
          capacity_(std::exchange(other.capacity_, 0)) {}
    WipedBytes& operator=(WipedBytes&&) = delete;
    ~WipedBytes() { release(); }

    unsigned char* data() noexcept { return data_.get(); }
    const unsigned char* data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }
    std::string_view view() const noexcept { return {reinterpret_cast<const char*>(data_.get()), size_}; }

    void append(const void* p, std::size_t n) {
        reserve(size_ + n);
        std::memcpy(data_.get() + size_, p, n);
        size_ += n;
    }

private:
    // Grows by copying into a new block and wiping the old one, so no stale
    // copy of the contents is left in freed memory.
    void reserve(std::size_t need) {
        if (need <= capacity_) return;
        std::size_t fresh_capacity = std::max({need, capacity_ * 2, std::size_t{4096}});
        auto fresh = std::make_unique<unsigned char[]>(fresh_capacity);
        if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
        release();
        data_ = std::move(fresh);
        capacity_ = fresh_capacity;
    }

    void release() noexcept {
        if (data_) OPENSSL_cleanse(data_.get(), capacity_);
        data_.reset();
        capacity_ = 0;
    }

    std::unique_ptr<unsigned char[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

// An ostream target for nlohmann's serialiser that lands in WipedBytes rather
// than a std::string, whose growth would leave unwiped copies behind.
class WipedStreamBuf : public std::streambuf {
public:
    WipedBytes& bytes() { return bytes_; }

protected:
    int_type overflow(int_type ch) override {
        if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
        const char c = traits_type::to_char_type(ch);
        bytes_.append(&c, 1);
        return ch;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        bytes_.append(s, static_cast<std::size_t>(n));
        return n;
    }

private:
    WipedBytes bytes_;
};

struct JsonWiper {
    json& j;
    ~JsonWiper() { wipe_json_strings(j); }
};

struct DerivedKey {
    std::array<unsigned char, key_size> bytes{};
    DerivedKey() = default;
    DerivedKey(const DerivedKey&) = delete;
    DerivedKey& operator=(const DerivedKey&) = delete;
    ~DerivedKey() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

// --- encodings --------------------------------------------------------------

std::string hex(const unsigned char* p, std::size_t n) {
    return hex_encode(std::string_view(reinterpret_cast<const char*>(p), n), /*upper_hex=*/false);
}

void random_bytes(unsigned char* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) != 1)
        throw std::runtime_error("random number generator failed: " + openssl_errors());
}

// --- key derivation ------------------------------------------------------------

// HKDF-SHA256 with a distinct info per use, so the master key itself keys
// nothing and one derived key says nothing about another.
void derive_key(std::string_view master, std::string_view info, DerivedKey& out) {
    KdfPtr kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr));
    if (!kdf) throw StoreError("HKDF is not available: " + openssl_errors());
    KdfCtxPtr ctx(EVP_KDF_CTX_new(kdf.get()));
    if (!ctx) throw StoreError("cannot create an HKDF context: " + openssl_errors());
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(master.data()), master.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()), info.size()),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_KDF_derive(ctx.get(), out.bytes.data(), out.bytes.size(), params) != 1)
        throw StoreError("key derivation failed: " + openssl_errors());
}

void require_master_key_size(const Secret& master_key) {
    if (master_key.size() != master_key_size)
        throw StoreError("the master key must be " + std::to_string(master_key_size) + " bytes, got " +
                         std::to_string(master_key.size()));
}

// --- the payload ----------------------------------------------------------------

// Thrown while decoding the payload; the loader adds the path. Messages name
// fields, never values.
struct PayloadError {
    std::string message;
};

[[noreturn]] void payload_fail(const std::string& where, const std::string& what) {
    throw PayloadError{where + ": " + what};
}

const json& member(const json& obj, std::string_view key, const std::string& where) {
    if (!obj.is_object()) payload_fail(where, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) payload_fail(where, "missing '" + std::string(key) + "'");
    return *it;
}

std::string string_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_string()) payload_fail(where + "." + std::string(key), "expected a string");
    return v.get<std::string>();
}

std::uint64_t u64_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_number_unsigned()) payload_fail(where + "." + std::string(key), "expected an unsigned integer");
    return v.get<std::uint64_t>();
}

std::int64_t i64_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_number_integer()) payload_fail(where + "." + std::string(key), "expected an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
        payload_fail(where + "." + std::string(key), "out of range");
    return v.get<std::int64_t>();
}

const json& array_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_array()) payload_fail(where + "." + std::string(key), "expected a list");
    return v;
}

json encode_payload(const StoreData& data) {
    json vaults = json::array();
    for (const auto& v : data.vaults) {
        json credentials = json::array();
        for (const auto& c : v.credentials) {
            // base64 so that any byte string survives JSON, which must be UTF-8.
            std::string encoded = base64_encode(c.value.reveal(), Base64Alphabet::standard, true);
            json entry = {{"name", c.name}, {"version", c.version}, {"updated_at_ms", c.updated_at_ms}};
            entry["value"] = std::move(encoded);  // moves the heap block: no copy to wipe
            wipe_string(encoded);
            credentials.push_back(std::move(entry));
        }
        json services = json::array();
        for (const auto& s : v.services) services.push_back({{"id", s.id}, {"config", service_to_json(s.config)}});
        vaults.push_back({{"id", v.id},
                          {"name", v.name},
                          {"created_at_ms", v.created_at_ms},
                          {"credentials", std::move(credentials)},
                          {"services", std::move(services)}});
    }
    json sessions = json::array();
    for (const auto& s : data.sessions) {
        json entry = {{"id", s.id},
                      {"token_digest", s.token_digest},
                      {"vault_ids", s.vault_ids},
                      {"policy", policy_to_json(s.policy)},
                      {"policy_name", s.policy.name},
                      {"expires_at_ms", s.expires_at_ms}};
        entry["source"] = s.source ? json(cidr_text(*s.source)) : json(nullptr);
        sessions.push_back(std::move(entry));
    }
    return {{"generation", data.generation}, {"vaults", std::move(vaults)}, {"sessions", std::move(sessions)}};
}

StoreData decode_payload(const json& root) {
    StoreData data;
    // Stores written before the generation was kept read as generation 0; the
    // next save writes one.
    if (root.is_object() && !root.contains("generation"))
        data.generation = 0;
    else
        data.generation = u64_member(root, "generation", "payload");
    const auto& vaults = array_member(root, "vaults", "payload");
    for (std::size_t i = 0; i < vaults.size(); ++i) {
        const auto where = "vaults[" + std::to_string(i) + "]";
        const auto& v = vaults[i];
        StoredVault vault;
        vault.id = string_member(v, "id", where);
        vault.name = string_member(v, "name", where);
        vault.created_at_ms = i64_member(v, "created_at_ms", where);
        const auto& credentials = array_member(v, "credentials", where);
        for (std::size_t k = 0; k < credentials.size(); ++k) {
            const auto cwhere = where + ".credentials[" + std::to_string(k) + "]";
            const auto& c = credentials[k];
            StoredCredential cred;
            cred.name = string_member(c, "name", cwhere);
            cred.version = u64_member(c, "version", cwhere);
            cred.updated_at_ms = i64_member(c, "updated_at_ms", cwhere);
            const auto& value = member(c, "value", cwhere);
            if (!value.is_string()) payload_fail(cwhere + ".value", "expected a string");
            auto raw = base64_decode(value.get_ref<const std::string&>());
            if (!raw) payload_fail(cwhere + ".value", "not valid base64");
            cred.value = Secret(*raw);
            wipe_string(*raw);
            vault.credentials.push_back(std::move(cred));
        }
        const auto& services = array_member(v, "services", where);
        for (std::size_t k = 0; k < services.size(); ++k) {
            const auto swhere = where + ".services[" + std::to_string(k) + "]";
            StoredService svc;
            svc.id = string_member(services[k], "id", swhere);
            std::string why;
            auto config = service_from_json(member(services[k], "config", swhere), &why);
            if (!config) payload_fail(swhere + ".config", why);
            svc.config = std::move(*config);
            vault.services.push_back(std::move(svc));
        }
        data.vaults.push_back(std::move(vault));
    }
    const auto& sessions = array_member(root, "sessions", "payload");
    for (std::size_t i = 0; i < sessions.size(); ++i) {
        const auto where = "sessions[" + std::to_string(i) + "]";
        const auto& s = sessions[i];
        StoredSession session;
        session.id = string_member(s, "id", where);
        session.token_digest = string_member(s, "token_digest", where);
        const auto& ids = array_member(s, "vault_ids", where);
        for (const auto& id : ids) {
            if (!id.is_string()) payload_fail(where + ".vault_ids", "expected strings");
            session.vault_ids.push_back(id.get<std::string>());
        }
        std::string why;
        auto policy = policy_from_json(member(s, "policy", where), &why);
        if (!policy) payload_fail(where + ".policy", why);
        session.policy = std::move(*policy);
        session.policy.name = string_member(s, "policy_name", where);
        session.expires_at_ms = i64_member(s, "expires_at_ms", where);
        const auto& source = member(s, "source", where);
        if (!source.is_null()) {
            if (!source.is_string()) payload_fail(where + ".source", "expected a string or null");
            session.source = parse_cidr(source.get<std::string>());
            if (!session.source) payload_fail(where + ".source", "not a CIDR");
        }
        data.sessions.push_back(std::move(session));
    }
    return data;
}

// --- files ----------------------------------------------------------------------

using Fd = UniqueFd;

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool write_all(int fd, const unsigned char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

// Reads at most `limit` bytes; sets `more` when the file holds further bytes.
// Returns false with errno set on a read error.
bool read_up_to(int fd, WipedBytes& out, std::size_t limit, bool& more) {
    unsigned char buf[8192];
    more = false;
    for (;;) {
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            OPENSSL_cleanse(buf, sizeof buf);
            return false;
        }
        if (r == 0) break;
        const auto n = static_cast<std::size_t>(r);
        if (out.size() + n > limit) {
            out.append(buf, limit - out.size());
            more = true;
            break;
        }
        out.append(buf, n);
    }
    OPENSSL_cleanse(buf, sizeof buf);
    return true;
}

// Temp files of writers that died mid-save. Best effort: a failure here
// must not stop the save itself.
void remove_stale_temps(const std::string& path) {
    const auto dir = dir_of(path);
    const auto prefix = base_of(path) + ".tmp-";
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return;
    const auto now = std::chrono::system_clock::now();
    while (const dirent* e = ::readdir(d.get())) {
        const std::string_view name = e->d_name;
        if (!name.starts_with(prefix)) continue;
        const auto rest = name.substr(prefix.size());
        const auto dash = rest.find('-');
        if (dash == 0 || dash == std::string_view::npos || dash > 9) continue;
        long pid = 0;
        for (char c : rest.substr(0, dash)) {
            if (c < '0' || c > '9') {
                pid = 0;
                break;
            }
            pid = pid * 10 + (c - '0');
        }
        if (pid <= 0 || pid == ::getpid()) continue;
        if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
        const std::string full = dir + "/" + std::string(name);
        struct stat st {};
        if (::lstat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        const auto mtime = std::chrono::system_clock::from_time_t(st.st_mtime);
        if (now - mtime < stale_temp_age) continue;
        ::unlink(full.c_str());
    }
}

// Replaces `path` whole: after a crash it holds the old or the new bytes,
// never a mix. A temp file beside it (random name, O_EXCL, never through a
// link, mode 0600), fsync, rename, fsync of the directory. Throws StoreError
// naming `path`.
void replace_file(const std::string& path, const unsigned char* bytes, std::size_t size) {
    const auto fail = [&](const std::string& what) { throw StoreError(path + ": " + what); };
    unsigned char suffix[8];
    random_bytes(suffix, sizeof suffix);
    const std::string temp = path + ".tmp-" + std::to_string(::getpid()) + "-" + hex(suffix, sizeof suffix);
    Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0) fail("cannot create temporary file " + temp + ": " + errno_text());
    // The umask may only take bits away; fchmod makes 0600 exact either way.
    const auto discard = [&](const std::string& what) {
        const std::string reason = what + ": " + errno_text();
        ::unlink(temp.c_str());
        fail(reason);
    };
    if (::fchmod(fd.get(), 0600) != 0) discard("cannot set mode 0600 on " + temp);
    if (!write_all(fd.get(), bytes, size)) discard("cannot write " + temp);
    if (::fsync(fd.get()) != 0) discard("cannot fsync " + temp);
    if (fd.close() != 0) discard("cannot close " + temp);
    if (::rename(temp.c_str(), path.c_str()) != 0) discard("cannot rename " + temp + " over " + base_of(path));

    // The rename is only durable once the directory entry is on disk.
    const auto dir = dir_of(path);
    Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() < 0 || ::fsync(dfd.get()) != 0) fail("saved, but cannot fsync directory " + dir + ": " + errno_text());
}

// --- the file store ---------------------------------------------------------------

class FileStore final : public VaultStore {
public:
    FileStore(std::string path, const Secret& master_key) : path_(std::move(path)) {
        require_master_key_size(master_key);
        derive_key(master_key.reveal(), store_key_info, key_);
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
        json payload = encode_payload(data);
        JsonWiper wipe_payload{payload};
        WipedStreamBuf text;
        {
            std::ostream out(&text);
            try {
                out << payload;
            } catch (const json::exception& e) {
                // Invalid UTF-8 in a name; values are base64 and cannot cause it.
                fail(std::string("cannot encode the store: ") + e.what());
            }
        }
        const auto& plain = text.bytes();
        if (plain.size() > max_store_bytes - header_size - tag_size) fail("the data is too large to save");

        WipedBytes file(header_size + plain.size() + tag_size);
        unsigned char* header = file.data();
        std::memcpy(header, magic.data(), magic.size());
        header[version_offset] = format_version;
        random_bytes(header + nonce_offset, nonce_size);
        std::uint64_t length = plain.size();
        for (int i = 7; i >= 0; --i, length >>= 8) header[length_offset + i] = static_cast<unsigned char>(length);

        CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
        int n = 0;
        if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce_size), nullptr) != 1 ||
            EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key_.bytes.data(), header + nonce_offset) != 1 ||
            EVP_EncryptUpdate(ctx.get(), nullptr, &n, header, static_cast<int>(header_size)) != 1 ||
            EVP_EncryptUpdate(ctx.get(), file.data() + header_size, &n, plain.data(), static_cast<int>(plain.size())) != 1 ||
            static_cast<std::size_t>(n) != plain.size() ||
            EVP_EncryptFinal_ex(ctx.get(), file.data() + header_size + n, &n) != 1 || n != 0 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag_size),
                                file.data() + header_size + plain.size()) != 1)
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
        CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
        int n = 0;
        if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce_size), nullptr) != 1 ||
            EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, key_.bytes.data(), p + nonce_offset) != 1 ||
            EVP_DecryptUpdate(ctx.get(), nullptr, &n, p, static_cast<int>(header_size)) != 1 ||
            EVP_DecryptUpdate(ctx.get(), plain.data(), &n, p + header_size, static_cast<int>(length)) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag_size),
                                const_cast<unsigned char*>(p + header_size + length)) != 1)
            fail("decryption failed: " + openssl_errors());
        // GCM only knows whether the data is intact at the end; the plaintext is
        // not looked at before then.
        if (EVP_DecryptFinal_ex(ctx.get(), plain.data() + n, &n) != 1) {
            openssl_errors();  // drained: the queue says no more than "bad tag"
            fail("wrong master key or damaged store (authentication failed)");
        }

        json root;
        JsonWiper wipe_root{root};
        try {
            const auto text = plain.view();
            root = json::parse(text.begin(), text.end());
            return decode_payload(root);
        } catch (const json::exception&) {
            // Authentic yet unreadable: written by something other than this
            // version of vaultgate. The parser's message could quote payload text.
            fail("damaged store: the payload is not valid JSON");
        } catch (const PayloadError& e) {
            fail("damaged store: " + e.message);
        }
    }

    static std::string truncated(std::size_t size, std::size_t expected) {
        return "truncated: " + std::to_string(size) + " bytes, expected " + std::to_string(expected);
    }

    std::string path_;
    DerivedKey key_;
};

// --- rollback protection ---------------------------------------------------------

// The generation record: the highest store generation vaultgate has seen, as
// decimal digits and a newline. Deliberately without a MAC: whoever can write
// beside the store can also delete this file, so it cannot stop that writer;
// it catches an older copy of the store file put back on its own (a backup or
// snapshot restore), which would bring back revoked sessions and replaced
// credentials.
class RollbackGuard final : public VaultStore {
public:
    RollbackGuard(std::unique_ptr<VaultStore> inner, std::string record_path, bool allow_rollback)
        : inner_(std::move(inner)), record_path_(std::move(record_path)), allow_rollback_(allow_rollback) {}

    StoreData load() override {
        StoreData data = inner_->load();
        const auto seen = read_record();
        if (seen && *seen > data.generation && !allow_rollback_)
            throw StoreError(inner_->describe() + ": the store is at generation " + std::to_string(data.generation) +
                             ", older than generation " + std::to_string(*seen) + " last seen (" + record_path_ +
                             "): an older copy of the store was put back, which would bring back revoked sessions "
                             "and replaced credentials; to start from it anyway, run serve once with --allow-rollback");
        // Also after a crash between the store's rename and the record's.
        if (!seen || *seen != data.generation) write_record(data.generation);
        last_ = data.generation;
        return data;
    }

    void save(const StoreData& data) override {
        // Two different states under one generation would let the older one
        // pass the check.
        if (data.generation <= last_)
            throw StoreError(inner_->describe() + ": not saved: generation " + std::to_string(data.generation) +
                             " is not above " + std::to_string(last_) + ", the last one loaded or saved");
        // The store first: a crash in between leaves the record behind the
        // store, which the next load accepts, never ahead of it.
        inner_->save(data);
        write_record(data.generation);
        last_ = data.generation;
    }

    std::string describe() const override { return inner_->describe(); }

private:
    // nullopt when there is no record yet. A record that is not one (garbage,
    // a FIFO, a directory) is an error unless it is about to be overwritten.
    std::optional<std::uint64_t> read_record() const {
        // O_NONBLOCK: a FIFO planted here must not hang the start.
        Fd fd(::open(record_path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
        if (fd.get() < 0) {
            if (errno == ENOENT) return std::nullopt;
            return unreadable_record("cannot open: " + errno_text());
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) return unreadable_record("cannot stat: " + errno_text());
        if (!S_ISREG(st.st_mode)) return unreadable_record("not a regular file");
        WipedBytes bytes;
        bool more = false;
        if (!read_up_to(fd.get(), bytes, 32, more)) return unreadable_record("cannot read: " + errno_text());
        auto text = bytes.view();
        if (text.ends_with('\n')) text.remove_suffix(1);
        if (more || text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string_view::npos)
            return unreadable_record("expected a generation number");
        std::uint64_t value = 0;
        for (char c : text) {
            const auto digit = static_cast<std::uint64_t>(c - '0');
            if (value > (UINT64_MAX - digit) / 10) return unreadable_record("expected a generation number");
            value = value * 10 + digit;
        }
        return value;
    }

    std::optional<std::uint64_t> unreadable_record(const std::string& what) const {
        // --allow-rollback replaces whatever is there with the store's generation.
        if (allow_rollback_) return std::nullopt;
        throw StoreError(record_path_ + ": " + what + " (the store generation last seen; remove it or run serve "
                         "once with --allow-rollback)");
    }

    void write_record(std::uint64_t generation) const {
        const std::string text = std::to_string(generation) + "\n";
        remove_stale_temps(record_path_);
        replace_file(record_path_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    }

    std::unique_ptr<VaultStore> inner_;
    std::string record_path_;
    bool allow_rollback_;
    std::uint64_t last_ = 0;
};

// --- master key sources -------------------------------------------------------------

// Reads a key file whole (up to a small cap, enough to report its size).
// Returns nullopt when the file does not exist and `missing_ok`.
std::optional<Secret> read_key_file(const std::string& path, const std::string& label, bool missing_ok,
                                    bool base64_allowed) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        if (missing_ok && errno == ENOENT) return std::nullopt;
        throw StoreError(label + " " + path + ": cannot open: " + errno_text());
    }
    constexpr std::size_t cap = 4096;
    WipedBytes bytes;
    bool more = false;
    if (!read_up_to(fd.get(), bytes, cap, more)) throw StoreError(label + " " + path + ": cannot read: " + errno_text());
    const std::string seen = more ? "more than " + std::to_string(cap) + " bytes" : std::to_string(bytes.size()) + " bytes";
    if (bytes.size() == master_key_size && !more) return Secret(std::string(bytes.view()));
    if (base64_allowed && !more) {
        const auto text = without_line_ending(bytes.view());
        if (auto raw = base64_decode(text)) {
            const auto n = raw->size();
            if (n == master_key_size) {
                Secret key(*raw);
                wipe_string(*raw);
                return key;
            }
            wipe_string(*raw);
        }
        throw StoreError(label + " " + path + ": expected 32 raw bytes or the base64 of 32 bytes, found " + seen);
    }
    throw StoreError(label + " " + path + ": expected exactly 32 bytes, found " + seen);
}

}  // namespace

std::unique_ptr<VaultStore> open_file_store(const std::string& path, const Secret& master_key) {
    if (path.empty()) throw StoreError("store.path is empty");
    return std::make_unique<FileStore>(path, master_key);
}

std::string generation_record_path(const std::string& store_path) { return store_path + ".generation"; }

std::unique_ptr<VaultStore> guard_against_rollback(std::unique_ptr<VaultStore> store, const std::string& record_path,
                                                   bool allow_rollback) {
    return std::make_unique<RollbackGuard>(std::move(store), record_path, allow_rollback);
}

Secret load_master_key(const std::optional<std::string>& master_key_file) {
    if (master_key_file)
        return *read_key_file(*master_key_file, "store.master_key_file", /*missing_ok=*/false, /*base64_allowed=*/false);

    if (const char* env = std::getenv("VAULTGATE_MASTER_KEY")) {
        std::string_view text = env;
        // `export VAULTGATE_MASTER_KEY=$(cat file)` keeps no newline, but an
        // env file may; surrounding whitespace is never part of base64.
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
            text.remove_suffix(1);
        while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
        if (text.empty()) throw StoreError("VAULTGATE_MASTER_KEY is set but empty");
        auto raw = base64_decode(text);
        if (!raw)
            throw StoreError("VAULTGATE_MASTER_KEY is not valid base64 (expected the base64 of 32 random bytes, "
                             "as from `openssl rand -base64 32`)");
        const auto n = raw->size();
        if (n != master_key_size) {
            wipe_string(*raw);
            throw StoreError("VAULTGATE_MASTER_KEY decodes to " + std::to_string(n) + " bytes; expected 32");
        }
        Secret key(*raw);
        wipe_string(*raw);
        return key;
    }

    if (const char* dir = std::getenv("CREDENTIALS_DIRECTORY"); dir && *dir) {
        if (auto key = read_key_file(std::string(dir) + "/master-key", "systemd credential master-key",
                                     /*missing_ok=*/true, /*base64_allowed=*/true))
            return std::move(*key);
    }
    throw StoreError(std::string(no_master_key));
}

std::string credential_fingerprint(const Secret& master_key, std::string_view value) {
    require_master_key_size(master_key);
    DerivedKey key;
    derive_key(master_key.reveal(), fingerprint_key_info, key);
    MacPtr mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
    if (!mac) throw StoreError("HMAC is not available: " + openssl_errors());
    MacCtxPtr ctx(EVP_MAC_CTX_new(mac.get()));
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    unsigned char out[EVP_MAX_MD_SIZE];
    std::size_t out_len = 0;
    if (!ctx || EVP_MAC_init(ctx.get(), key.bytes.data(), key.bytes.size(), params) != 1 ||
        EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(value.data()), value.size()) != 1 ||
        EVP_MAC_final(ctx.get(), out, &out_len, sizeof out) != 1 || out_len < 8)
        throw StoreError("HMAC failed: " + openssl_errors());
    // 64 bits tell versions apart; the full MAC would add nothing for that.
    return "hmac-sha256:" + hex(out, 8);
}

std::string token_digest(std::string_view token) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed: " + openssl_errors());
    return hex(md, len);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    if (a.empty()) return true;
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_id(std::string_view prefix) {
    static constexpr std::string_view base32 = "abcdefghijklmnopqrstuvwxyz234567";
    std::array<unsigned char, 20> bytes{};
    random_bytes(bytes.data(), bytes.size());
    std::string out(prefix);
    // 256 is a multiple of 32, so masking keeps every character equally likely.
    for (auto b : bytes) out += base32[b & 31];
    return out;
}

std::string random_token() {
    std::array<unsigned char, 32> bytes{};
    random_bytes(bytes.data(), bytes.size());
    std::string token =
        base64_encode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), Base64Alphabet::url,
                      false);
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return token;
}

}  // namespace vaultgate
