// The master key's three sources; see load_master_key in vault/store.hpp.
#include "vaultgate/vault/store.hpp"

#include "vaultgate/crypto/key_derivation.hpp"  // master_key_size
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/secret_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace vaultgate {

namespace {

constexpr std::string_view no_master_key =
    "no master key: set store.master_key_file, VAULTGATE_MASTER_KEY, or a systemd credential named master-key";

// Enough to report the size of a file that is not a key.
constexpr std::size_t key_file_cap = 4096;

// Reads a key file whole (bytes as they are: see util/secret_file.hpp).
// Returns nullopt when the file does not exist and `missing_ok`.
std::optional<Secret> read_key_file(const std::string& path, const std::string& label, bool missing_ok,
                                    bool base64_allowed) {
    std::string bytes;
    bool too_large = false;
    try {
        bytes = read_secret_file(path, SecretFileRules{key_file_cap, Whitespace::keep});
    } catch (const SecretFileError& e) {
        using Problem = SecretFileError::Problem;
        if (e.problem() == Problem::open && missing_ok && e.error_number() == ENOENT) return std::nullopt;
        if (e.problem() == Problem::open) throw StoreError(label + " " + path + ": cannot open: " + e.reason());
        if (e.problem() == Problem::read) throw StoreError(label + " " + path + ": cannot read: " + e.reason());
        if (e.problem() == Problem::not_regular) throw StoreError(label + " " + path + ": " + e.reason());
        too_large = true;
    }
    const std::string seen =
        too_large ? "more than " + std::to_string(key_file_cap) + " bytes" : std::to_string(bytes.size()) + " bytes";
    if (!too_large && bytes.size() == master_key_size) {
        Secret key(std::move(bytes));
        wipe_string(bytes);
        return key;
    }
    if (base64_allowed && !too_large) {
        if (auto raw = base64_decode(without_line_ending(bytes))) {
            const auto n = raw->size();
            if (n == master_key_size) {
                Secret key(*raw);
                wipe_string(*raw);
                wipe_string(bytes);
                return key;
            }
            wipe_string(*raw);
        }
        wipe_string(bytes);
        throw StoreError(label + " " + path + ": expected 32 raw bytes or the base64 of 32 bytes, found " + seen);
    }
    wipe_string(bytes);
    throw StoreError(label + " " + path + ": expected exactly 32 bytes, found " + seen);
}

}  // namespace

Secret load_master_key(const std::optional<std::string>& master_key_file) {
    if (master_key_file)
        return *read_key_file(*master_key_file, "store.master_key_file", /*missing_ok=*/false,
                              /*base64_allowed=*/false);

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
            throw StoreError(
                "VAULTGATE_MASTER_KEY is not valid base64 (expected the base64 of 32 random bytes, "
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

}  // namespace vaultgate
