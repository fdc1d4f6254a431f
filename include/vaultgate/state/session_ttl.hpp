#pragma once
// How long a session made through the admin API may live. One pair of numbers
// for the server, which enforces them, and the CLI, which checks arguments
// before it writes anything.
#include <chrono>

namespace vaultgate {

// The lifetime of a session that names no ttl_seconds.
inline constexpr std::chrono::seconds default_session_ttl{3600};
// The longest lifetime a session may ask for; ttl_seconds runs from 1 to this.
inline constexpr std::chrono::seconds max_session_ttl{86400};

}  // namespace vaultgate
