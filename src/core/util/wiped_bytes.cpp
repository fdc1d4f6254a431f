#include "vaultgate/util/wiped_bytes.hpp"

#include <openssl/crypto.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace vaultgate {

WipedBytes::WipedBytes(std::size_t n) {
    reserve(n);
    size_ = n;
}

WipedBytes::WipedBytes(WipedBytes&& other) noexcept
    : data_(std::move(other.data_)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

void WipedBytes::append(const void* p, std::size_t n) {
    reserve(size_ + n);
    std::memcpy(data_.get() + size_, p, n);
    size_ += n;
}

// Grows by copying into a new block and wiping the old one, so no stale copy
// of the contents is left in freed memory.
void WipedBytes::reserve(std::size_t need) {
    if (need <= capacity_) return;
    std::size_t fresh_capacity = std::max({need, capacity_ * 2, std::size_t{4096}});
    auto fresh = std::make_unique<unsigned char[]>(fresh_capacity);
    if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
    release();
    data_ = std::move(fresh);
    capacity_ = fresh_capacity;
}

void WipedBytes::release() noexcept {
    if (data_) OPENSSL_cleanse(data_.get(), capacity_);
    data_.reset();
    capacity_ = 0;
}

WipedStreamBuf::int_type WipedStreamBuf::overflow(int_type ch) {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const char c = traits_type::to_char_type(ch);
    bytes_.append(&c, 1);
    return ch;
}

std::streamsize WipedStreamBuf::xsputn(const char* s, std::streamsize n) {
    bytes_.append(s, static_cast<std::size_t>(n));
    return n;
}

bool read_up_to(int fd, WipedBytes& out, std::size_t limit, bool& more) {
    unsigned char buf[8192];
    more = false;
    for (;;) {
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            OPENSSL_cleanse(buf, sizeof buf);
            errno = err;
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

}  // namespace vaultgate
