#pragma once
// Where a bound service may point. A service's credential goes to whatever
// answers at its host, so some hosts are refused wherever services come in
// (the config file, the admin API, and through the API the bootstrapper):
// vaultgate's own listeners, the machine it runs on (unspecified, loopback,
// "localhost"), link-local and cloud metadata addresses, and a wildcard over a
// public suffix ("*.co.uk", "*.github.io"), which covers domains anyone can
// register, the sandbox's owner included. Names other than "localhost" are
// not resolved here: the proxy's own address checks apply when it connects.
#include "vaultgate/config/config.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vaultgate {

struct BindingRefusal {
    std::string code;     // "own_listener", "forbidden_address" or "public_suffix_wildcard"
    std::string message;  // quotes the host: every refused host is an address or a known name
};

// `host` is normalised as check_service_host leaves it (IPv6 without
// brackets, a wildcard with its "*."). A listener on port 0 gets its port at
// start, so it matches every port of its address. A listener on 0.0.0.0 or ::
// answers on every local address, which a pure check cannot list: only the
// unspecified and loopback addresses are refused for it, as for any service.
std::optional<BindingRefusal> check_service_binding(std::string_view host, std::uint16_t port,
                                                    std::span<const ListenAddress> listeners);

// The config's TCP listeners (proxy, transparent, admin), for the check above.
std::vector<ListenAddress> own_listeners(const Config& config);

}  // namespace vaultgate
