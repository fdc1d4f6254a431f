#pragma once
// The one reader for files that hold a secret: credential files named in the
// config, the master key, the admin token, and the CLI's --value-file and
// stdin. It reads through a WipedBytes buffer and builds the result once at
// its final size, so no copy of the secret is left in freed memory; it caps
// the size, so a wrong path (a log, a disk image) is not read whole; and its
// errors name the path and the problem, never any of the content.
//
// What surrounds the secret is the caller's decision (`Whitespace`):
// - credential files (config `file:` sources): drop_line_ending;
// - the CLI's credential value (--value-file or stdin): drop_line_ending;
// - the bootstrap env object on stdin: keep (it is JSON);
// - store.master_key_file: keep (exactly 32 raw bytes, a newline is a 33rd);
// - the systemd credential master-key: keep; the caller drops one line ending
//   itself when it reads the text as base64;
// - admin token files (admin.token_file, --token-file): keep;
//   validation::normalise_admin_token then trims all whitespace around the
//   token.
// Credential files and the master key must be regular files; admin token
// files and the CLI's inputs may also be pipes ("--value-file <(pass x)").
#include <cstddef>
#include <stdexcept>
#include <string>

namespace vaultgate {

enum class Whitespace {
    keep,              // every byte as it is in the file
    drop_line_ending,  // one trailing "\n" or "\r\n" dropped (without_line_ending)
};

struct SecretFileRules {
    std::size_t max_bytes = 0;  // a longer file is refused (too_large)
    Whitespace whitespace = Whitespace::keep;
    // A FIFO or a device could block or never end; false takes them anyway.
    bool regular_file_only = true;
};

class SecretFileError : public std::runtime_error {
public:
    enum class Problem { open, not_regular, read, too_large };
    // what(): "<path>: <reason>".
    SecretFileError(std::string path, Problem problem, int error_number, std::string reason);

    const std::string& path() const noexcept { return path_; }
    Problem problem() const noexcept { return problem_; }
    // errno for open and read failures, else 0.
    int error_number() const noexcept { return error_number_; }
    // strerror text, "not a regular file" or "larger than N bytes".
    const std::string& reason() const noexcept { return reason_; }

private:
    std::string path_;
    Problem problem_;
    int error_number_;
    std::string reason_;
};

// The content of `path` under `rules`. Throws SecretFileError. The caller
// wipes the result (wipe_string) or moves it into a Secret.
std::string read_secret_file(const std::string& path, const SecretFileRules& rules);

// The same for an open descriptor (stdin), read to its end; `name` stands for
// the path in errors. regular_file_only does not apply.
std::string read_secret_fd(int fd, const std::string& name, const SecretFileRules& rules);

}  // namespace vaultgate
