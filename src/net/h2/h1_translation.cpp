#include "net/h2/h1_translation.hpp"

#include "vaultgate/egress/host.hpp"
#include "vaultgate/http/message.hpp"

#include <algorithm>

namespace vaultgate::net::h2 {

namespace {

void lower(std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
}

// RFC 9113 §8.3.1: a host field that names another entity than :authority;
// "x.com" and "X.com:443" name the same one. Either unparsable counts as
// different; the pipeline refuses a bad authority on its own.
bool same_entity(std::string_view host, std::string_view authority) {
    const auto a = parse_authority(host, 443);
    const auto b = parse_authority(authority, 443);
    return a.authority && b.authority && *a.authority == *b.authority;
}

}  // namespace

std::string_view to_request_head(H2Request&& req, RequestHead& out) {
    if (req.has_protocol) return "extended CONNECT is not offered";
    if (req.method == "CONNECT") return "CONNECT inside an intercepted connection";
    if (req.scheme != "https") return ":scheme is not https";
    if (req.path.empty() || (req.path[0] != '/' && req.path != "*")) return ":path is not origin-form";
    std::string host;
    std::size_t hosts = 0;
    std::string cookies;
    bool has_length = false;
    for (const Header& h : req.fields) {
        if (h.name == "host") {
            ++hosts;
            host = h.value;
        } else if (h.name == "content-length") {
            has_length = true;
        }
    }
    if (hosts > 1) return "several host fields";
    if (req.authority.empty()) {
        if (hosts == 0) return "neither :authority nor host";
        req.authority = host;
    } else if (hosts == 1 && !same_entity(host, req.authority)) {
        return "host differs from :authority";
    }

    out.method = std::move(req.method);
    out.target = std::move(req.path);
    out.version_minor = 1;
    out.headers.clear();
    out.headers.reserve(req.fields.size() + 2);
    out.headers.push_back({"Host", std::move(req.authority)});
    for (Header& h : req.fields) {
        if (h.name == "host" || h.name == "te") continue;
        if (h.name == "cookie") {
            if (!cookies.empty()) cookies.append("; ");
            cookies.append(h.value);
            continue;
        }
        out.headers.push_back(std::move(h));
    }
    if (!cookies.empty()) out.headers.push_back({"cookie", std::move(cookies)});
    if (!has_length && !req.end_stream) out.headers.push_back({"Transfer-Encoding", "chunked"});
    return {};
}

std::vector<Header> response_fields(std::vector<Header>&& fields, bool drop_length) {
    const auto tokens = connection_tokens(fields);
    std::vector<Header> out;
    out.reserve(fields.size());
    for (Header& h : fields) {
        if (is_hop_by_hop(h.name) || listed_in(tokens, h.name)) continue;
        if (drop_length && iequals(h.name, "content-length")) continue;
        lower(h.name);
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace vaultgate::net::h2
