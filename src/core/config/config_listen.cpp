// The listen section: where the proxy, the transparent listener and the admin
// API bind.
#include "config_sections.hpp"

#include "vaultgate/egress/address.hpp"

namespace vaultgate::config_sections {

namespace {

using yaml::shown;

std::optional<std::uint16_t> parse_port_text(std::string_view s, bool allow_zero) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    for (char c : s)
        if (c < '0' || c > '9') return std::nullopt;
    if (s.size() > 1 && s[0] == '0') return std::nullopt;
    unsigned v = 0;
    for (char c : s) v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > 65535 || (v == 0 && !allow_zero)) return std::nullopt;
    return static_cast<std::uint16_t>(v);
}

// "ip:port", "[v6]:port", "unix:/path". Names are refused: a listener binds to
// an address, and resolving at startup would make the bind depend on DNS.
std::optional<ListenAddress> parse_listen_address(std::string_view text, bool allow_unix, std::string* why) {
    ListenAddress out;
    if (text.starts_with("unix:")) {
        if (!allow_unix) {
            *why = "unix sockets are only supported for listen.admin";
            return std::nullopt;
        }
        const auto path = text.substr(5);
        // sun_path holds 108 bytes including the terminating NUL.
        if (path.empty() || path.size() > 107 || path.find('\0') != std::string_view::npos) {
            *why = "expected unix:/path (at most 107 bytes)";
            return std::nullopt;
        }
        out.unix_path = std::string(path);
        return out;
    }
    const std::string expected =
        std::string("expected IP:PORT or [IPv6]:PORT") + (allow_unix ? " or unix:/path" : "") + ", got " + shown(text);
    std::string_view host;
    std::string_view port;
    bool bracketed = false;
    if (text.starts_with("[")) {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            *why = expected;
            return std::nullopt;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        bracketed = true;
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            *why = expected;
            return std::nullopt;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    const auto ip = parse_ip_strict(host);
    // An unbracketed IPv6 address is ambiguous with its port; a bracketed IPv4 is not a thing.
    if (!ip || ip->v6 != bracketed) {
        *why = expected;
        return std::nullopt;
    }
    const auto p = parse_port_text(port, /*allow_zero=*/true);
    if (!p) {
        *why = "port must be 0-65535 without leading zeros, got " + shown(port);
        return std::nullopt;
    }
    out.host = std::string(host);
    for (auto& c : out.host)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    out.port = *p;
    return out;
}

ListenAddress listen_value(const yaml::Value& v, bool allow_unix) {
    const std::string expected = std::string("expected IP:PORT or [IPv6]:PORT") + (allow_unix ? " or unix:/path" : "");
    if (!v.is_scalar()) v.fail(expected + ", got " + v.kind());
    std::string why;
    auto addr = parse_listen_address(v.scalar(), allow_unix, &why);
    if (!addr) v.fail(why);
    return *addr;
}

}  // namespace

void read_listen(const yaml::Value& section, Config& cfg) {
    const auto f = section.section({"proxy", "transparent", "admin"});
    if (auto* p = f.find("proxy")) cfg.listen_proxy = listen_value(*p, false);
    if (auto* p = f.find("transparent")) {
        if (p->is_null())
            cfg.listen_transparent.reset();
        else
            cfg.listen_transparent = listen_value(*p, false);
    }
    if (auto* p = f.find("admin")) cfg.listen_admin = listen_value(*p, true);

    // Two listeners on one fixed address would fail at bind time with a
    // less helpful message; port 0 (tests) is always distinct.
    auto clash = [&](const ListenAddress& a, const ListenAddress& b) {
        return !a.is_unix() && !b.is_unix() && a.port != 0 && a.port == b.port && a.host == b.host;
    };
    if (auto* p = f.find("admin"); p && clash(cfg.listen_admin, cfg.listen_proxy))
        p->fail("same address as listen.proxy");
    if (auto* p = f.find("transparent"); p && cfg.listen_transparent) {
        if (clash(*cfg.listen_transparent, cfg.listen_proxy)) p->fail("same address as listen.proxy");
        if (clash(*cfg.listen_transparent, cfg.listen_admin)) p->fail("same address as listen.admin");
    }
}

}  // namespace vaultgate::config_sections
