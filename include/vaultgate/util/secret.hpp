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

// The one rule for a secret read from a file or stdin: editors and `echo` end
// it with a newline that is not part of the secret, so one trailing "\n" or
// "\r\n" is dropped, and nothing else.
inline std::string_view without_line_ending(std::string_view text) {
    if (text.ends_with("\r\n"))
        text.remove_suffix(2);
    else if (text.ends_with('\n'))
        text.remove_suffix(1);
    return text;
}

}  // namespace vaultgate
