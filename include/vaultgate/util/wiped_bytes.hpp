#pragma once
// A byte buffer for secrets in transit (a decrypted store, a key file, JSON
// text): wiped when released, and never grown by a reallocation that would
// leave an unwiped copy of its contents in freed memory.
#include <cstddef>
#include <memory>
#include <streambuf>
#include <string_view>

namespace vaultgate {

class WipedBytes {
public:
    WipedBytes() = default;
    explicit WipedBytes(std::size_t n);
    WipedBytes(const WipedBytes&) = delete;
    WipedBytes& operator=(const WipedBytes&) = delete;
    // A move hands the block over whole; nothing is left behind to wipe.
    WipedBytes(WipedBytes&& other) noexcept;
    WipedBytes& operator=(WipedBytes&&) = delete;
    ~WipedBytes() { release(); }

    unsigned char* data() noexcept { return data_.get(); }
    const unsigned char* data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }
    std::string_view view() const noexcept { return {reinterpret_cast<const char*>(data_.get()), size_}; }

    void append(const void* p, std::size_t n);
    // Room for `need` bytes in all, so that appending up to it moves nothing.
    void reserve(std::size_t need);

private:
    void release() noexcept;

    std::unique_ptr<unsigned char[]> data_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

// An ostream target (e.g. for nlohmann's serialiser) that lands in WipedBytes
// rather than a std::string, whose growth would leave unwiped copies behind.
class WipedStreamBuf : public std::streambuf {
public:
    WipedBytes& bytes() { return bytes_; }

protected:
    int_type overflow(int_type ch) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;

private:
    WipedBytes bytes_;
};

// Reads `fd` into `out` until end of file or `limit` bytes in all; sets `more`
// when the file holds further bytes. Returns false with errno set on a read
// error. The stack buffer it reads through is wiped too.
bool read_up_to(int fd, WipedBytes& out, std::size_t limit, bool& more);

}  // namespace vaultgate
