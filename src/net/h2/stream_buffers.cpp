#include "net/h2/stream_buffers.hpp"

#include "vaultgate/util/secret.hpp"

#include <algorithm>
#include <cstring>

namespace vaultgate::net::h2 {

std::vector<nghttp2_nv> to_nv(const std::vector<Header>& fields, std::string_view status) {
    std::vector<nghttp2_nv> nv;
    nv.reserve(fields.size() + 1);
    auto add = [&](std::string_view name, std::string_view value) {
        nv.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                      NGHTTP2_NV_FLAG_NONE});
    };
    if (!status.empty()) add(":status", status);
    for (const Header& h : fields) add(h.name, h.value);
    return nv;
}

// Either body may hold what is injected next to, or what the origin answered.
IncomingBody::~IncomingBody() { wipe_string(bytes_); }

std::size_t IncomingBody::consume(std::size_t n) {
    n = std::min(n, bytes_.size() - read_);
    read_ += n;
    if (read_ == bytes_.size()) {
        wipe_string(bytes_);
        bytes_.clear();
        read_ = 0;
    }
    return n;
}

OutgoingBody::~OutgoingBody() {
    wipe_string(bytes_);
    for (Header& h : trailers_) wipe_string(h.value);
}

bool OutgoingBody::append(std::string_view piece) {
    bytes_.append(piece);
    return std::exchange(deferred_, false);
}

bool OutgoingBody::finish(std::vector<Header> trailers) {
    finished_ = true;
    trailers_ = std::move(trailers);
    return std::exchange(deferred_, false);
}

ssize_t OutgoingBody::read(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                           std::uint32_t* flags) {
    const std::size_t n = std::min(length, bytes_.size() - sent_);
    std::memcpy(buf, bytes_.data() + sent_, n);
    sent_ += n;
    if (sent_ == bytes_.size()) {
        wipe_string(bytes_);
        bytes_.clear();
        sent_ = 0;
    }
    if (n == 0 && !finished_) {
        deferred_ = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (finished_ && bytes_.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!trailers_.empty()) {
            const auto nv = to_nv(trailers_);
            if (nghttp2_submit_trailer(session, id, nv.data(), nv.size()) == 0)
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }
    }
    return static_cast<ssize_t>(n);
}

}  // namespace vaultgate::net::h2
