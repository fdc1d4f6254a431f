#pragma once
// A JSON tree for text that holds a key or a token: every string, the parser's
// own token buffer and every node live in memory that is wiped when freed, so
// neither the tree nor the buffers the parser grew leave a copy behind.
#include "vaultgate/util/secret.hpp"
#include "vaultgate/util/wiping_allocator.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vaultgate::minting {

using WipedString = std::basic_string<char, std::char_traits<char>, WipingAllocator<char>>;
using WipedJson = nlohmann::basic_json<std::map, std::vector, WipedString, bool, std::int64_t, std::uint64_t, double,
                                       WipingAllocator>;

// The parsed text, or nullopt when it is not JSON. Never throws a parse error,
// whose message would quote the text.
inline std::optional<WipedJson> parse_wiped_json(const Secret& text) {
    const auto view = text.reveal();
    WipedJson tree = WipedJson::parse(view.begin(), view.end(), nullptr, /*allow_exceptions=*/false);
    if (tree.is_discarded()) return std::nullopt;
    return tree;
}

// The member `key` of an object when it is a string, else null.
inline const WipedString* string_member(const WipedJson& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string()) return nullptr;
    return &it->get_ref<const WipedString&>();
}

// A Secret holding `value`; the std::string it passes through is wiped by Secret.
inline Secret to_secret(const WipedString& value) { return Secret(std::string(value.data(), value.size())); }

}  // namespace vaultgate::minting
