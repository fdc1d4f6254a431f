// Fuzzes vaultgate's HTTP/2 server side after the client preface: random
// frames go to the nghttp2 session with vaultgate's callbacks, guards and
// stream bookkeeping; every complete request is answered at once, as the
// pipeline would, so response, trailer and reset paths run too. Nothing may
// crash, leak or grow without bound, and whatever the input, the connection's
// output stays valid HTTP/2 framing: 9-byte headers whose lengths add up.
#include "fuzz_check.hpp"

#include "net/h2/h2_server.hpp"

#include <string>

using namespace vaultgate::net;

namespace {

constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Whole frames only, each no larger than the 16 KiB SETTINGS_MAX_FRAME_SIZE default.
bool well_framed(std::string_view out) {
    while (!out.empty()) {
        if (out.size() < 9) return false;
        const std::size_t length = (static_cast<unsigned char>(out[0]) << 16) |
                                   (static_cast<unsigned char>(out[1]) << 8) | static_cast<unsigned char>(out[2]);
        if (length > 16384 || out.size() < 9 + length) return false;
        out.remove_prefix(9 + length);
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static asio::io_context ioc;
    static ssl::context tls(ssl::context::tls_server);
    // An open descriptor that nothing is connected to: the frames go to the
    // session directly, and the output is taken, never written.
    tcp::socket socket(ioc);
    socket.open(tcp::v4());
    TlsSocket client(std::move(socket), tls);
    Watchdog watchdog(ioc.get_executor());
    const std::atomic<bool> draining{false};
    h2::H2ServerLimits limits;
    limits.max_concurrent_streams = 8;
    limits.header_bytes = 4096;
    limits.header_count = 16;
    {
        h2::H2ServerConnection conn(client, watchdog, limits, draining);
        int served = 0;
        conn.set_handler([&](std::shared_ptr<h2::H2Stream> stream) {
            // Every other stream gets a body and trailers; the rest a bare 204.
            if (++served % 2 == 0) {
                stream->respond(204, {}, true);
            } else if (stream->respond(200, {{"content-type", "text/plain"}}, false)) {
                stream->finish({{"x-trailer", "t"}});
            }
            conn.stream_done();
        });
        conn.receive(preface.data(), preface.size());
        // In pieces, as reads split it: the first byte says how large.
        const std::size_t piece = size == 0 ? 1 : 1 + data[0] % 64;
        for (std::size_t at = 0; at < size; at += piece) {
            conn.receive(reinterpret_cast<const char*>(data) + at, std::min(piece, size - at));
            FUZZ_CHECK(well_framed(conn.take_output()));
        }
        FUZZ_CHECK(well_framed(conn.take_output()));
    }
    ioc.restart();
    ioc.poll();
    return 0;
}
