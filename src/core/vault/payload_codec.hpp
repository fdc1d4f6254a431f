#pragma once
// The payload of the file store: StoreData as the JSON text that is encrypted,
// and back. The JSON tree and the text both hold credential values (base64),
// and both are wiped before they are released. nlohmann's own scratch space
// (the parser's token buffer, the serialiser's 512-byte chunk buffer) is out of
// reach; being base64, any remnant there is encoded, not raw.
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <string>
#include <string_view>

namespace vaultgate {

// What is wrong with a payload, or why it cannot be encoded. The store adds
// its path. Messages name fields, never values.
struct PayloadError {
    std::string message;
};

// The JSON text of `data`. Throws PayloadError.
WipedBytes encode_payload(const StoreData& data);

// `text` read back. Throws PayloadError; the text is not quoted in it.
StoreData decode_payload(std::string_view text);

}  // namespace vaultgate
