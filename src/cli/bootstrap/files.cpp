#include "cli/bootstrap/files.hpp"

#include "cli/commands.hpp"
#include "vaultgate/util/encoding.hpp"

#include <openssl/rand.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vaultgate::cli::bootstrap {

namespace fs = std::filesystem;

namespace {

constexpr const char* system_trust_store = "/etc/ssl/certs/ca-certificates.crt";

// A new file beside `path` under a random name, created exclusively and never
// through a link: whatever was planted in the directory (a symlink pointing
// elsewhere, a FIFO whose open would block) is not opened.
int create_temp_beside(const fs::path& path, fs::path& temp, mode_t mode) {
    constexpr int attempts = 8;  // a clash of 64 random bits means someone is guessing
    for (int i = 0; i < attempts; ++i) {
        temp = path;
        temp += ".tmp-" + random_hex(8);
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0) return fd;
        if (errno != EEXIST) throw std::runtime_error("cannot write " + temp.string() + ": " + std::strerror(errno));
    }
    throw std::runtime_error("cannot write " + path.string() + ": " + std::to_string(attempts) +
                             " temporary names in a row already exist");
}

}  // namespace

std::string random_hex(std::size_t bytes) {
    std::vector<unsigned char> buf(bytes);
    if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1)
        throw std::runtime_error("the system random generator failed");
    return hex_encode(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()), /*upper_hex=*/false);
}

fs::path check_out_dir(const std::string& given) {
    std::error_code ec;
    fs::path path = fs::absolute(given, ec);
    if (ec) throw UsageError("--out-dir " + given + ": " + ec.message());
    if (fs::exists(path, ec) && !fs::is_directory(path, ec))
        throw UsageError("--out-dir " + given + " is not a directory");
    return path;
}

OutDir prepare_out_dir(const std::optional<std::string>& given) {
    OutDir out;
    if (given) {
        out.path = check_out_dir(*given);
        std::error_code ec;
        if (fs::exists(out.path, ec)) return out;
        fs::create_directories(out.path.parent_path(), ec);
        if (::mkdir(out.path.c_str(), 0700) != 0 && errno != EEXIST)
            throw UsageError("--out-dir " + *given + ": " + std::strerror(errno));
        return out;
    }
    const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
    std::error_code ec;
    fs::path base = runtime_dir != nullptr && *runtime_dir != '\0' && fs::is_directory(runtime_dir, ec)
                        ? fs::path(runtime_dir)
                        : fs::path("/tmp");
    std::string pattern = (base / "vaultgate-bootstrap-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)  // mkdtemp makes it 0700
        throw std::runtime_error("cannot make a directory under " + base.string() + ": " + std::strerror(errno));
    out.path = pattern;
    out.made_here = true;
    return out;
}

// The rename replaces a symlink or FIFO at `path` itself, never what a link
// points at.
void write_file(const fs::path& path, const std::string& content, mode_t mode) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw std::runtime_error("cannot write " + path.string() + ": it is a directory");
    fs::path temp;
    const int fd = create_temp_beside(path, temp, mode);
    const auto fail = [&](const std::string& what, int err) {
        ::unlink(temp.c_str());
        throw std::runtime_error("cannot write " + what + ": " + std::strerror(err));
    };
    std::string_view rest = content;
    while (!rest.empty()) {
        ssize_t n = ::write(fd, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            fail(temp.string(), err);
        }
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::close(fd) != 0) fail(temp.string(), errno);
    if (::rename(temp.c_str(), path.c_str()) != 0) fail(path.string(), errno);
}

// Tunnelled hosts present their real certificates, bound hosts present ours,
// and one file has to verify both.
std::string ca_bundle(const std::string& ca_pem) {
    std::ifstream in(system_trust_store, std::ios::binary);
    std::string bundle;
    if (in) {
        std::ostringstream text;
        text << in.rdbuf();
        bundle = text.str();
    }
    if (bundle.empty())
        std::fprintf(stderr,
                     "vaultgate bootstrap: warning: %s is not readable; ca-bundle.pem holds only the vaultgate CA, "
                     "so tunnelled hosts will not verify\n",
                     system_trust_store);
    else if (bundle.back() != '\n')
        bundle += '\n';
    bundle += ca_pem;
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
    return bundle;
}

}  // namespace vaultgate::cli::bootstrap
