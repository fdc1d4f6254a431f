// The transparent listener's SNI reader on arbitrary first bytes: never reads
// out of bounds, and a name it returns is printable and non-empty. The same
// bytes as a supported_versions body: lists_tls13 stays in bounds, and a list
// it accepts is well formed and holds 0x0304.
#include "fuzz_check.hpp"
#include "vaultgate/egress/client_hello.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    auto r = vaultgate::read_client_hello(in);
    if (r.status == vaultgate::HelloStatus::ok) {
        FUZZ_CHECK(!r.server_name.empty());
        for (char c : r.server_name)
            FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f);
        // More bytes after a complete hello never change the answer.
        std::string longer(in);
        longer += "trailing";
        FUZZ_CHECK(vaultgate::read_client_hello(longer).server_name == r.server_name);
    }
    if (vaultgate::lists_tls13(in)) {
        FUZZ_CHECK(size >= 3 && size % 2 == 1 && std::size_t{data[0]} + 1 == size);
        bool found = false;
        for (std::size_t i = 1; i + 1 < size; i += 2) found = found || (data[i] == 0x03 && data[i + 1] == 0x04);
        FUZZ_CHECK(found);
    }
    return 0;
}
