#include "vaultgate/credentials/admin_token.hpp"

#include "vaultgate/credentials/validation.hpp"
#include "vaultgate/util/secret.hpp"
#include "vaultgate/util/secret_file.hpp"

namespace vaultgate {

namespace {

// A token travels in one header line; no real one comes near this.
constexpr std::size_t max_token_file_bytes = 64 * 1024;

}  // namespace

std::string read_admin_token_file(const std::string& path, std::string_view what) {
    const std::string where = std::string(what) + " " + path;
    std::string token;
    try {
        // Not only regular files: the CLI also takes "--token-file <(pass x)".
        token = read_secret_file(path, {max_token_file_bytes, Whitespace::keep, /*regular_file_only=*/false});
    } catch (const SecretFileError& e) {
        if (e.problem() == SecretFileError::Problem::read)
            throw std::runtime_error("reading " + where + ": " + e.reason());
        throw AdminTokenError(where + ": " + e.reason());
    }
    if (auto why = validation::normalise_admin_token(token)) {
        wipe_string(token);
        throw AdminTokenError(where + " " + *why);
    }
    return token;
}

}  // namespace vaultgate
