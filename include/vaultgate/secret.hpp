#pragma once
// A credential value. It has no stream operator, no implicit conversion and no
// formatter, so it cannot end up in a log line or an error message by accident:
// the only way to the bytes is the explicit reveal(). Memory is wiped when freed.
#include <string>
#include <string_view>

namespace vaultgate {

class Secret {
public:
    Secret() = default;
    explicit Secret(std::string value);
    Secret(const Secret& other);
    Secret& operator=(const Secret& other);
    Secret(Secret&& other) noexcept;
    Secret& operator=(Secret&& other) noexcept;
    ~Secret();

    // The raw bytes. Call sites are few and greppable: injection, redaction, the store.
    std::string_view reveal() const noexcept { return value_; }
    bool empty() const noexcept { return value_.empty(); }
    std::size_t size() const noexcept { return value_.size(); }

private:
    void wipe() noexcept;
    std::string value_;
};

// Deleted on purpose: printing a Secret is a compile error.
template <class Stream>
Stream& operator<<(Stream&, const Secret&) = delete;

// Overwrites a std::string's bytes (capacity included) before it is released.
void wipe_string(std::string& s) noexcept;

}  // namespace vaultgate
