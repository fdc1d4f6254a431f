#include "atomic_file.hpp"

#include "vaultgate/crypto/ids.hpp"
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string_view>

namespace vaultgate {

namespace {

using Fd = UniqueFd;

// A temp file left by a crashed writer is removed by a later save once its
// writer is gone and it is this old; the age guards against a pid from another
// pid namespace that only looks dead from here.
constexpr auto stale_temp_age = std::chrono::seconds(60);

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

}  // namespace

std::string errno_text() { return std::strerror(errno); }

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

void replace_file(const std::string& path, const unsigned char* bytes, std::size_t size) {
    const auto fail = [&](const std::string& what) { throw StoreError(path + ": " + what); };
    unsigned char suffix[8];
    random_bytes(suffix, sizeof suffix);
    const auto suffix_hex =
        hex_encode(std::string_view(reinterpret_cast<const char*>(suffix), sizeof suffix), /*upper_hex=*/false);
    const std::string temp = path + ".tmp-" + std::to_string(::getpid()) + "-" + suffix_hex;
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
    if (dfd.get() < 0 || ::fsync(dfd.get()) != 0)
        fail("saved, but cannot fsync directory " + dir + ": " + errno_text());
}

std::optional<WipedBytes> read_store_file(const std::string& path, int extra_flags, std::size_t limit,
                                          std::string_view kind) {
    const auto fail = [&](const std::string& what) { throw StoreError(path + ": " + what); };
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | extra_flags));
    if (fd.get() < 0) {
        if (errno == ENOENT) return std::nullopt;
        fail("cannot open: " + errno_text());
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail("cannot stat: " + errno_text());
    if (!S_ISREG(st.st_mode)) fail("not a regular file");
    WipedBytes file;
    bool more = false;
    if (!read_up_to(fd.get(), file, limit, more)) fail("cannot read: " + errno_text());
    if (more) fail("larger than " + std::to_string(limit >> 20) + " MiB; not a vaultgate " + std::string(kind));
    return file;
}

}  // namespace vaultgate
