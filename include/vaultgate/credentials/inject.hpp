#pragma once
// Credential injection: a pure function over a parsed request head.
#include "vaultgate/credentials/auth_spec.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/util/secret.hpp"

#include <string>

namespace vaultgate {

// Removes every copy of the target header in any letter case, and any header
// whose name equals it with '_' for '-', then sets exactly one injected value.
// For `query`, every occurrence of the parameter in the target's query string is
// replaced by one parameter carrying the secret (added when absent).
// The secret then sits in plain std::string fields of `head` (the header value,
// or `target`): wipe the head (wipe_string) once it has been serialised.
// Throws std::invalid_argument, with head unchanged, when the header name, the
// template or the secret would corrupt the serialised head (CR, LF, NUL, ...).
void inject_credential(RequestHead& head, const AuthSpec& spec, const Secret& secret);

// The header value injection would set (for tests and redaction), e.g. "Bearer s".
Secret injected_value(const AuthSpec& spec, const Secret& secret);

}  // namespace vaultgate
