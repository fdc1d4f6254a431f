#include "vaultgate/config/service_binding.hpp"

#include "vaultgate/egress/address.hpp"

#include <libpsl.h>

#include <algorithm>
#include <iterator>
#include <memory>

namespace vaultgate {

namespace {

// ::ffff:a.b.c.d is a.b.c.d on the wire; compare it as such.
IpAddress unmapped(IpAddress ip) {
    static constexpr std::uint8_t mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!ip.v6 || !std::equal(std::begin(mapped_prefix), std::end(mapped_prefix), ip.bytes.begin())) return ip;
    return IpAddress::v4(ip.bytes[12], ip.bytes[13], ip.bytes[14], ip.bytes[15]);
}

std::optional<BindingRefusal> check_own_listener(const IpAddress& ip, std::uint16_t port,
                                                 std::span<const ListenAddress> listeners) {
    for (const auto& listener : listeners) {
        if (listener.is_unix() || (listener.port != 0 && listener.port != port)) continue;
        const auto address = parse_ip_strict(listener.host);
        if (!address || unmapped(*address) != unmapped(ip)) continue;
        const std::string where =
            listener.port != 0 ? listener.to_string() : listener.host + " (on a port chosen at start)";
        return BindingRefusal{"own_listener", where + " is one of vaultgate's own listeners"};
    }
    return std::nullopt;
}

std::optional<BindingRefusal> check_address(const IpAddress& ip) {
    std::string_view what;
    switch (classify_address(ip)) {
        case AddressClass::unspecified:
            what = "an unspecified address (this machine)";
            break;
        case AddressClass::loopback:
            what = "a loopback address (this machine)";
            break;
        case AddressClass::link_local:
            what = "a link-local address";
            break;
        case AddressClass::metadata:
            what = "a cloud metadata address";
            break;
        default:
            return std::nullopt;
    }
    return BindingRefusal{"forbidden_address",
                          ip.to_string() + " is " + std::string(what) + "; a credential is never bound to it"};
}

bool is_localhost_name(std::string_view name) { return name == "localhost" || name.ends_with(".localhost"); }

struct PslFree {
    void operator()(psl_ctx_t* p) const { psl_free(p); }
};

// The newer of libpsl's built-in list and the system's (Debian's publicsuffix
// package); loaded once. Null when neither is there.
const psl_ctx_t* public_suffix_list() {
    static const std::unique_ptr<psl_ctx_t, PslFree> list(psl_latest(nullptr));
    return list.get();
}

std::optional<BindingRefusal> check_wildcard_base(std::string_view base) {
    const psl_ctx_t* list = public_suffix_list();
    // Without the list no wildcard can be shown to be safe.
    if (!list)
        return BindingRefusal{"public_suffix_wildcard",
                              "the public suffix list is not available, so no wildcard "
                              "can be checked; bind the hosts one by one"};
    const std::string text(base);
    if (!psl_is_public_suffix2(list, text.c_str(), PSL_TYPE_ANY)) return std::nullopt;
    return BindingRefusal{"public_suffix_wildcard", "*." + text + " covers every domain under the public suffix " +
                                                        text + "; bind a registrable domain (e.g. *.example." + text +
                                                        ") or single hosts"};
}

}  // namespace

std::optional<BindingRefusal> check_service_binding(std::string_view host, std::uint16_t port,
                                                    std::span<const ListenAddress> listeners) {
    if (host.starts_with("*.")) {
        const auto base = host.substr(2);
        if (is_localhost_name(base))
            return BindingRefusal{"forbidden_address", std::string(host) + " names this machine"};
        return check_wildcard_base(base);
    }
    if (const auto ip = parse_ip_strict(host)) {
        if (auto refusal = check_own_listener(*ip, port, listeners)) return refusal;
        return check_address(*ip);
    }
    if (is_localhost_name(host)) return BindingRefusal{"forbidden_address", std::string(host) + " names this machine"};
    return std::nullopt;
}

std::vector<ListenAddress> own_listeners(const Config& config) {
    std::vector<ListenAddress> out{config.listen_proxy, config.listen_admin};
    if (config.listen_transparent) out.push_back(*config.listen_transparent);
    std::erase_if(out, [](const ListenAddress& a) { return a.is_unix(); });
    return out;
}

}  // namespace vaultgate
