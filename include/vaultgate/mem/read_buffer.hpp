#pragma once
// A connection's receive buffer: bytes read but not yet consumed. Heads are
// parsed in place; what follows a head (body bytes, a pipelined request) stays
// here for the next step.
//
// Storage is a plain array, not a std::string: making room for a read must not
// zero-fill it (a string's resize would, once per read), and the array is kept
// between reads so that streaming a body allocates nothing per read. It comes
// from the thread's block cache, so a new connection usually gets the buffer
// a closed one left.
#include "vaultgate/mem/block_cache.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

namespace vaultgate::net {

class ReadBuffer {
public:
    explicit ReadBuffer(std::size_t read_size = 16384) : read_size_(read_size) {}

    std::string_view view() const { return std::string_view(data_.get() + start_, end_ - start_); }
    std::size_t size() const { return end_ - start_; }
    bool empty() const { return start_ == end_; }

    void consume(std::size_t n) {
        start_ += n;
        if (start_ == end_) start_ = end_ = 0;
    }

    // Space for the next read: returns a writable region of `len` bytes at the end.
    char* prepare(std::size_t& len) {
        if (capacity_ - end_ < read_size_) {
            if (start_ > 0 && capacity_ - size() >= read_size_) {
                // Room enough once the consumed prefix is gone.
                std::memmove(data_.get(), data_.get() + start_, size());
            } else {
                // Grow: what is unconsumed plus a full read.
                std::size_t wanted = std::max(capacity_ * 2, size() + read_size_);
                Storage bigger(static_cast<char*>(block_cache::allocate(wanted)));
                if (!bigger) throw std::bad_alloc();
                if (size() > 0) std::memcpy(bigger.get(), data_.get() + start_, size());
                data_ = std::move(bigger);
                capacity_ = wanted;
            }
            end_ -= start_;
            start_ = 0;
        }
        len = capacity_ - end_;
        return data_.get() + end_;
    }
    void commit(std::size_t n) { end_ += n; }

    // Returns memory to the allocator while a connection idles.
    void release_if_empty() {
        if (empty()) {
            data_.reset();
            capacity_ = start_ = end_ = 0;
        }
    }

private:
    struct Release {
        void operator()(char* p) const { block_cache::release(p); }
    };
    using Storage = std::unique_ptr<char, Release>;

    Storage data_;
    std::size_t capacity_ = 0;
    std::size_t start_ = 0;
    std::size_t end_ = 0;
    std::size_t read_size_;
};

}  // namespace vaultgate::net
