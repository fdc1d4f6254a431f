#pragma once
// Wiping a parsed JSON document whose strings hold credential values.
// Private to src/core; not part of the public interface.
#include "vaultgate/util/secret.hpp"

#include <string>

namespace vaultgate {

// Overwrites every string value in a tree before it is freed. Object keys are
// const inside the tree and cannot be wiped; no key the callers parse holds a
// secret. Works for nlohmann::json and nlohmann::ordered_json alike.
template <class Json>
void wipe_json_strings(Json& j) noexcept {
    if (j.is_string()) {
        wipe_string(j.template get_ref<std::string&>());
    } else if (j.is_structured()) {
        for (auto& item : j) wipe_json_strings(item);
    }
}

}  // namespace vaultgate
