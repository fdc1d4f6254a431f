#pragma once
// The admin token file: the server's admin.token_file and the CLI's
// --token-file, read by one function so both agree on the token.
#include <stdexcept>
#include <string>
#include <string_view>

namespace vaultgate {

// The token file cannot be opened or holds no usable token: a mistake in what
// the operator gave (the CLI exits with 2). The message names the file, never
// the token.
class AdminTokenError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The token in `path`, read through a wiped buffer (util/secret_file.hpp) and
// checked as validation::normalise_admin_token says: whitespace around it is
// dropped. `what` names the setting in messages ("admin.token_file"). Throws
// AdminTokenError, or std::runtime_error when an opened file cannot be read.
// The caller wipes the result (wipe_string) or moves it into a Secret.
std::string read_admin_token_file(const std::string& path, std::string_view what);

}  // namespace vaultgate
