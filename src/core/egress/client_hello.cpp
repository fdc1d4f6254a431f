#include "vaultgate/egress/client_hello.hpp"

#include <algorithm>
#include <cstdint>

namespace vaultgate {

namespace {

// A bounds-checked reader: every read fails once the data runs out, so a
// truncated or lying length field can never read past the buffer.
class Reader {
public:
    Reader() = default;
    explicit Reader(std::string_view data) : data_(data) {}
    bool u8(std::uint32_t& v) { return take(1, v); }
    bool u16(std::uint32_t& v) { return take(2, v); }
    bool u24(std::uint32_t& v) { return take(3, v); }
    bool skip(std::size_t n) {
        if (data_.size() - pos_ < n) return false;
        pos_ += n;
        return true;
    }
    bool sub(std::size_t n, Reader& out) {
        if (data_.size() - pos_ < n) return false;
        out = Reader(data_.substr(pos_, n));
        pos_ += n;
        return true;
    }
    std::string_view rest() const { return data_.substr(pos_); }
    bool empty() const { return pos_ == data_.size(); }

private:
    bool take(std::size_t n, std::uint32_t& v) {
        if (data_.size() - pos_ < n) return false;
        v = 0;
        for (std::size_t i = 0; i < n; ++i) v = v << 8 | static_cast<unsigned char>(data_[pos_ + i]);
        pos_ += n;
        return true;
    }
    std::string_view data_;
    std::size_t pos_ = 0;
};

constexpr std::uint32_t record_handshake = 22;
constexpr std::uint32_t handshake_client_hello = 1;
constexpr std::uint32_t extension_server_name = 0;
constexpr std::uint32_t name_type_host = 0;
constexpr std::size_t max_record = max_client_hello_bytes - 5;
constexpr std::size_t record_header_bytes = 5;
constexpr std::size_t headers_bytes = record_header_bytes + 4;  // and the handshake header

}  // namespace

HelloResult read_client_hello(std::string_view bytes) {
    HelloResult r;
    if (bytes.empty()) return r;
    if (static_cast<unsigned char>(bytes[0]) != record_handshake) return {HelloStatus::not_tls, {}};
    if (bytes.size() < 5) return r;
    if (static_cast<unsigned char>(bytes[1]) != 3) return {HelloStatus::not_tls, {}};
    std::size_t record_len = static_cast<unsigned char>(bytes[3]) << 8 | static_cast<unsigned char>(bytes[4]);
    if (record_len == 0 || record_len > max_record) return {HelloStatus::malformed, {}};

    // The handshake header says how long the ClientHello is; it must fit the record.
    if (bytes.size() < 9) return r;
    Reader head(bytes.substr(5, 4));
    std::uint32_t type = 0, hello_len = 0;
    head.u8(type);
    head.u24(hello_len);
    if (type != handshake_client_hello) return {HelloStatus::malformed, {}};
    if (hello_len + 4 > record_len) return {HelloStatus::malformed, {}};  // split over records
    if (bytes.size() < 9 + hello_len) return r;

    Reader hello(bytes.substr(9, hello_len));
    std::uint32_t len = 0;
    if (!hello.skip(2 + 32)) return {HelloStatus::malformed, {}};                             // version, random
    if (!hello.u8(len) || len > 32 || !hello.skip(len)) return {HelloStatus::malformed, {}};  // session id
    if (!hello.u16(len) || len < 2 || len % 2 || !hello.skip(len)) return {HelloStatus::malformed, {}};
    if (!hello.u8(len) || len < 1 || !hello.skip(len)) return {HelloStatus::malformed, {}};  // compression
    if (hello.empty()) return {HelloStatus::no_sni, {}};
    Reader extensions;
    if (!hello.u16(len) || !hello.sub(len, extensions)) return {HelloStatus::malformed, {}};

    bool seen_sni = false;
    while (!extensions.empty()) {
        std::uint32_t ext_type = 0, ext_len = 0;
        Reader ext;
        if (!extensions.u16(ext_type) || !extensions.u16(ext_len) || !extensions.sub(ext_len, ext))
            return {HelloStatus::malformed, {}};
        if (ext_type != extension_server_name) continue;
        // A second server_name extension is a protocol violation and a way to
        // disagree with whoever reads the first one.
        if (seen_sni) return {HelloStatus::malformed, {}};
        seen_sni = true;
        Reader list;
        if (!ext.u16(len) || !ext.sub(len, list) || !ext.empty()) return {HelloStatus::malformed, {}};
        std::uint32_t name_type = 0, name_len = 0;
        if (!list.u8(name_type) || name_type != name_type_host || !list.u16(name_len) || name_len == 0)
            return {HelloStatus::malformed, {}};
        auto name = list.rest().substr(0, name_len);
        if (name.size() != name_len || !list.skip(name_len) || !list.empty()) return {HelloStatus::malformed, {}};
        for (char c : name)
            if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
                return {HelloStatus::malformed, {}};
        r.server_name = std::string(name);
    }
    r.status = seen_sni ? HelloStatus::ok : HelloStatus::no_sni;
    return r;
}

std::size_t client_hello_bytes_needed(std::string_view bytes) {
    if (bytes.size() < record_header_bytes) return record_header_bytes;
    if (bytes.size() < headers_bytes) return headers_bytes;
    const std::size_t hello_len = static_cast<std::size_t>(static_cast<unsigned char>(bytes[6])) << 16 |
                                  static_cast<std::size_t>(static_cast<unsigned char>(bytes[7])) << 8 |
                                  static_cast<unsigned char>(bytes[8]);
    // read_client_hello refuses a hello longer than its record, and a record over 16 KiB.
    return std::min(headers_bytes + hello_len, max_client_hello_bytes);
}

bool lists_tls13(std::string_view supported_versions) {
    if (supported_versions.empty()) return false;
    const std::size_t list_bytes = static_cast<unsigned char>(supported_versions[0]);
    if (list_bytes % 2 != 0 || list_bytes + 1 != supported_versions.size()) return false;
    for (std::size_t i = 1; i < supported_versions.size(); i += 2)
        if (supported_versions[i] == '\x03' && supported_versions[i + 1] == '\x04') return true;
    return false;
}

}  // namespace vaultgate
