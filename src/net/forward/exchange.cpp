#include "net/forward/exchange.hpp"

#include "net/forward/h2_fields.hpp"
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

H1ClientShape shape_for_h1_client(const BodyFraming& rf, const RequestPlan& req, bool redacting, bool draining) {
    const bool client_http10 = req.summary.version_minor == 0;
    // Redaction changes the body's length, so a Content-Length cannot be kept.
    const bool length_changes = redacting && rf.kind == BodyKind::content_length;
    const bool unframed = rf.kind == BodyKind::until_close || length_changes;
    H1ClientShape shape;
    shape.keep_length = rf.kind == BodyKind::content_length && !length_changes;
    // An unframed body is re-chunked for HTTP/1.1 clients so their connection survives it.
    shape.rechunk = rf.kind == BodyKind::chunked || (unframed && !client_http10);
    shape.close_after = req.client_close || (unframed && client_http10) || draining;
    return shape;
}

ResponseHead head_for_h1_client(ResponseHead&& resp, const BodyFraming& rf, const H1ClientShape& shape) {
    const auto tokens = connection_tokens(resp.headers);
    ResponseHead out;
    out.version_minor = 1;
    out.status = resp.status;
    out.reason = std::move(resp.reason);
    out.headers.reserve(resp.headers.size() + 2);
    for (auto& h : resp.headers) {
        if (is_hop_by_hop(h.name) || listed_in(tokens, h.name) || iequals(h.name, "content-length")) continue;
        out.headers.push_back(std::move(h));
    }
    if (shape.keep_length)
        out.headers.push_back({"Content-Length", std::to_string(rf.length)});
    else if (shape.rechunk)
        out.headers.push_back({"Transfer-Encoding", "chunked"});
    if (shape.close_after) out.headers.push_back({"Connection", "close"});
    return out;
}

std::vector<Header> trailers_for_client(std::vector<Header>&& fields, const Redactor* redactor) {
    ResponseHead head;
    for (Header& h : fields)
        if (allowed_in_trailers(h.name) && validation::is_http_token(h.name)) head.headers.push_back(std::move(h));
    if (!redactor) return std::move(head.headers);
    redact_head(head, *redactor);
    std::erase_if(head.headers, [&](Header& h) {
        if (!redactor->contains_secret(h.name) && !redactor->contains_secret(h.value)) return false;
        wipe_string(h.value);
        return true;
    });
    return std::move(head.headers);
}

std::string last_chunk_with(const std::vector<Header>& trailers) {
    std::string out = "0\r\n";
    for (const Header& h : trailers) out.append(h.name).append(": ").append(h.value).append("\r\n");
    out.append("\r\n");
    return out;
}

void wipe_head(RequestHead& head) {
    for (auto& h : head.headers) wipe_string(h.value);
    wipe_string(head.target);
}

}  // namespace vaultgate::net
