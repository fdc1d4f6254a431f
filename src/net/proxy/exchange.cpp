#include "net/proxy/exchange.hpp"

#include "vaultgate/credentials/validation.hpp"

namespace vaultgate::net {

namespace {

// Proxy-* fields are for vaultgate, never for the origin: Proxy-Authorization
// holds the session token. '_' counts as '-', as some servers read it.
bool is_proxy_field(std::string_view name) {
    return name.size() >= 6 && iequals(name.substr(0, 5), "proxy") && (name[5] == '-' || name[5] == '_');
}

// Replaces every copy of the secret in `text`, wiping the old bytes.
void redact_in_place(std::string& text, const Redactor& redactor) {
    if (!redactor.contains_secret(text)) return;
    std::string clean = redactor.redact_all(text);
    wipe_string(text);
    text = std::move(clean);
}

void redact_head(ResponseHead& head, const Redactor& redactor) {
    redact_in_place(head.reason, redactor);
    std::vector<Header> kept;
    kept.reserve(head.headers.size());
    for (Header& h : head.headers) {
        redact_in_place(h.name, redactor);
        redact_in_place(h.value, redactor);
        if (validation::is_http_token(h.name)) kept.push_back(std::move(h));
        else wipe_string(h.value);
    }
    head.headers = std::move(kept);
}

}  // namespace

bool content_coding_is_identity(const ResponseHead& head) {
    std::size_t fields = 0;
    bool identity = true;
    for (const Header& h : head.headers) {
        if (!iequals(h.name, "content-encoding")) continue;
        ++fields;
        identity = iequals(h.value, "identity");
    }
    return fields == 0 || (fields == 1 && identity);
}

std::optional<std::string> serialize_for_client(ResponseHead& head, const Redactor* redactor) {
    if (!redactor) return serialize_response_head(head);
    redact_head(head, *redactor);
    std::string text = serialize_response_head(head);
    if (redactor->contains_secret(text)) {
        wipe_string(text);
        return std::nullopt;
    }
    return text;
}

std::optional<std::string> informational_for_client(ResponseHead& info, int client_version_minor,
                                                    const Redactor* redactor) {
    if (info.status == 100 || client_version_minor == 0) return std::nullopt;
    auto tokens = connection_tokens(info.headers);
    std::erase_if(info.headers, [&](const Header& h) { return is_hop_by_hop(h.name) || listed_in(tokens, h.name); });
    info.version_minor = 1;
    return serialize_for_client(info, redactor);
}

OutgoingHead build_outgoing_head(RequestHead&& client_head, std::string origin_form, std::string host_header,
                                 const BodyFraming& framing, bool websocket, bool strip_accept_encoding) {
    OutgoingHead out;
    auto tokens = connection_tokens(client_head.headers);
    auto upgrade = client_head.get("upgrade");
    std::string upgrade_value = upgrade ? std::string(*upgrade) : std::string();
    RequestHead& up = out.head;
    up.method = std::move(client_head.method);
    up.target = std::move(origin_form);
    up.version_minor = 1;
    up.headers.reserve(client_head.headers.size() + 3);
    up.headers.push_back({"Host", std::move(host_header)});
    for (auto& h : client_head.headers) {
        if (is_hop_by_hop(h.name) || is_proxy_field(h.name) || listed_in(tokens, h.name) ||
            iequals(h.name, "content-length") || iequals(h.name, "host"))
            continue;
        if (iequals(h.name, "expect")) {
            if (iequals(h.value, "100-continue")) out.expect_continue = true;
            else out.bad_expect = true;
            continue;
        }
        // Redaction needs an identity-encoded body to scan.
        if (strip_accept_encoding && iequals(h.name, "accept-encoding")) continue;
        up.headers.push_back(std::move(h));
    }
    if (framing.kind == BodyKind::content_length)
        up.headers.push_back({"Content-Length", std::to_string(framing.length)});
    else if (framing.kind == BodyKind::chunked)
        up.headers.push_back({"Transfer-Encoding", "chunked"});
    if (websocket) {
        up.headers.push_back({"Connection", "Upgrade"});
        up.headers.push_back({"Upgrade", std::move(upgrade_value)});
    }
    if (framing.kind == BodyKind::none) out.expect_continue = false;
    return out;
}

}  // namespace vaultgate::net
