#include "vaultgate/util/secret_file.hpp"

#include "vaultgate/util/secret.hpp"
#include "vaultgate/util/unique_fd.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vaultgate {

namespace {

[[noreturn]] void fail_errno(const std::string& path, SecretFileError::Problem problem, int err) {
    throw SecretFileError(path, problem, err, std::strerror(err));
}

std::string read_to_end(int fd, const std::string& name, const SecretFileRules& rules) {
    WipedBytes bytes;
    bool more = false;
    if (!read_up_to(fd, bytes, rules.max_bytes, more)) fail_errno(name, SecretFileError::Problem::read, errno);
    if (more)
        throw SecretFileError(name, SecretFileError::Problem::too_large, 0,
                              "larger than " + std::to_string(rules.max_bytes) + " bytes");
    const auto text =
        rules.whitespace == Whitespace::drop_line_ending ? without_line_ending(bytes.view()) : bytes.view();
    return std::string(text);  // one allocation at its final size
}

}  // namespace

SecretFileError::SecretFileError(std::string path, Problem problem, int error_number, std::string reason)
    : std::runtime_error(path + ": " + reason),
      path_(std::move(path)),
      problem_(problem),
      error_number_(error_number),
      reason_(std::move(reason)) {}

std::string read_secret_file(const std::string& path, const SecretFileRules& rules) {
    // O_NONBLOCK so that opening a FIFO cannot hang; it is refused below.
    const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | (rules.regular_file_only ? O_NONBLOCK : 0);
    UniqueFd fd(::open(path.c_str(), flags));
    if (fd.get() < 0) fail_errno(path, SecretFileError::Problem::open, errno);
    if (rules.regular_file_only) {
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) fail_errno(path, SecretFileError::Problem::read, errno);
        if (!S_ISREG(st.st_mode))
            throw SecretFileError(path, SecretFileError::Problem::not_regular, 0, "not a regular file");
    }
    return read_to_end(fd.get(), path, rules);
}

std::string read_secret_fd(int fd, const std::string& name, const SecretFileRules& rules) {
    return read_to_end(fd, name, rules);
}

}  // namespace vaultgate
