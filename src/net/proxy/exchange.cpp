#include "net/proxy/exchange.hpp"

#include "vaultgate/credentials/validation.hpp"

namespace vaultgate::net {

namespace {

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
        if (validation::is_http_token(h.name))
            kept.push_back(std::move(h));
        else
            wipe_string(h.value);
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

}  // namespace vaultgate::net
