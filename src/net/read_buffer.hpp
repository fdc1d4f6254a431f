#pragma once
// A connection's receive buffer: bytes read but not yet consumed. Heads are
// parsed in place; what follows a head (body bytes, a pipelined request) stays
// here for the next step.
#include <cstddef>
#include <string>
#include <string_view>

namespace vaultgate::net {

class ReadBuffer {
public:
    explicit ReadBuffer(std::size_t read_size = 16384) : read_size_(read_size) {}

    std::string_view view() const { return std::string_view(data_).substr(start_); }
    std::size_t size() const { return data_.size() - start_; }
    bool empty() const { return size() == 0; }

    void consume(std::size_t n) {
        start_ += n;
        if (start_ == data_.size()) {
            data_.clear();
            start_ = 0;
        }
    }

    // Space for the next read: returns a writable region at the end.
    char* prepare(std::size_t& len) {
        if (start_ > 0 && start_ * 2 >= data_.size()) {
            data_.erase(0, start_);
            start_ = 0;
        }
        old_size_ = data_.size();
        data_.resize(old_size_ + read_size_);
        len = read_size_;
        return data_.data() + old_size_;
    }
    void commit(std::size_t n) { data_.resize(old_size_ + n); }

    // Returns memory to the allocator while a connection idles.
    void release_if_empty() {
        if (empty()) {
            std::string().swap(data_);
            start_ = 0;
        }
    }

private:
    std::string data_;
    std::size_t start_ = 0;
    std::size_t old_size_ = 0;
    std::size_t read_size_;
};

}  // namespace vaultgate::net
