// The transparent listener's SNI reader on arbitrary first bytes: never reads
// out of bounds, and a name it returns is printable and non-empty.
#include "fuzz_check.hpp"
#include "vaultgate/client_hello.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    auto r = vaultgate::read_client_hello(in);
    if (r.status == vaultgate::HelloStatus::ok) {
        FUZZ_CHECK(!r.server_name.empty());
        for (char c : r.server_name) FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f);
        // More bytes after a complete hello never change the answer.
        std::string longer(in);
        longer += "trailing";
        FUZZ_CHECK(vaultgate::read_client_hello(longer).server_name == r.server_name);
    }
    return 0;
}
