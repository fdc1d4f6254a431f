#pragma once
// The one error of minting's pure steps (a bad key, a service-account JSON
// without a field). Its message names the step or the field, never a value.
#include <stdexcept>

namespace vaultgate::minting {

struct MintError : std::runtime_error {
    using runtime_error::runtime_error;
};

}  // namespace vaultgate::minting
