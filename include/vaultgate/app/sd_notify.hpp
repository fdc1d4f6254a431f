#pragma once
// systemd readiness notification (Type=notify) without libsystemd: one datagram
// to $NOTIFY_SOCKET. A no-op when the variable is unset.
#include <string_view>

namespace vaultgate::cli {

void sd_notify_state(std::string_view state);  // e.g. "READY=1", "RELOADING=1", "STOPPING=1"

}  // namespace vaultgate::cli
