#pragma once
// nghttp2 calls back from C: an exception (an allocation that failed) must
// not unwind through its frames. `no_throw<&f>` calls f and turns any
// exception into NGHTTP2_ERR_CALLBACK_FAILURE, which ends the session.
#include <nghttp2/nghttp2.h>

namespace vaultgate::net::h2 {

template <auto Fn>
struct NoThrow;

template <class R, class... Args, R (*Fn)(Args...)>
struct NoThrow<Fn> {
    static R call(Args... args) noexcept {
        try {
            return Fn(args...);
        } catch (...) {
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
    }
};

template <auto Fn>
constexpr auto no_throw = &NoThrow<Fn>::call;

}  // namespace vaultgate::net::h2
