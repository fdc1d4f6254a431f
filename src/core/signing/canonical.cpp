// The SigV4 canonical request. Every rule here mirrors what AWS computes on
// its side from the bytes it receives; a difference of one byte is a
// SignatureDoesNotMatch, so each rule follows the published test suite and
// the reference SDKs rather than RFC 3986 where the two disagree.
#include "vaultgate/signing/sigv4.hpp"

#include "text.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/secret.hpp"

#include <algorithm>
#include <optional>

namespace vaultgate::sigv4 {

namespace {

// AWS's own dot-segment removal, which also drops empty segments ("//"), so
// "//example//" signs as "/example/" and "/example/.." as "/".
std::string normalised_path(std::string_view path) {
    if (path.empty()) return "/";
    std::vector<std::string_view> kept;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        const std::string_view segment = path.substr(start, end - start);
        if (segment == "..") {
            if (!kept.empty()) kept.pop_back();
        } else if (!segment.empty() && segment != ".") {
            kept.push_back(segment);
        }
        start = end + 1;
    }
    std::string out;
    out.reserve(path.size());
    if (path.front() == '/') out += '/';
    for (std::size_t i = 0; i < kept.size(); ++i) {
        if (i > 0) out += '/';
        out += kept[i];
    }
    if (path.back() == '/' && !kept.empty()) out += '/';
    if (out.empty()) out = "/";
    return out;
}

// Each segment percent-encoded, '/' kept as the separator.
void append_encoded_path(std::string& out, std::string_view path) {
    std::size_t start = 0;
    while (true) {
        const std::size_t slash = path.find('/', start);
        append_percent_encoded(out, path.substr(start, slash == std::string_view::npos ? slash : slash - start));
        if (slash == std::string_view::npos) return;
        out += '/';
        start = slash + 1;
    }
}

// S3 decodes the key and encodes it once: an escape the client sent is
// decoded and re-encoded (so "%2f" and "%2F" agree), but a '/' that came
// from "%2F" is data inside a segment and stays "%2F", never a separator.
void append_s3_path(std::string& out, std::string_view path) {
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (path[i] == '/') {
            out += '/';
        } else if (const std::optional<unsigned char> b = percent_escape_at(path, i)) {
            const char byte = static_cast<char>(*b);
            append_percent_encoded(out, std::string_view(&byte, 1));
            i += 2;
        } else {
            append_percent_encoded(out, path.substr(i, 1));
        }
    }
}

// Runs of spaces and tabs become one space; the ends are trimmed.
std::string trimmed_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    bool pending_space = false;
    for (char c : value) {
        if (c == ' ' || c == '\t') {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out += ' ';
        pending_space = false;
        out += c;
    }
    return out;
}

struct CanonicalHeader {
    std::string name;
    std::string value;
};

// A signed value may be the session token: copies made here are wiped.
void wipe_values(std::vector<CanonicalHeader>& headers) {
    for (auto& h : headers) wipe_string(h.value);
}

// Lower-cased, sorted by name (stable, so repeats keep their order) and
// repeats joined with ','.
std::vector<CanonicalHeader> canonical_headers(const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<CanonicalHeader> sorted;
    sorted.reserve(headers.size());
    for (const auto& [name, value] : headers) sorted.push_back({lowered(name), trimmed_value(value)});
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const CanonicalHeader& a, const CanonicalHeader& b) { return a.name < b.name; });
    std::vector<CanonicalHeader> joined;
    joined.reserve(sorted.size());
    for (auto& h : sorted) {
        if (!joined.empty() && joined.back().name == h.name) {
            joined.back().value += ',';
            joined.back().value += h.value;
        } else {
            joined.push_back(std::move(h));
        }
    }
    wipe_values(sorted);
    return joined;
}

std::string list_of_names(const std::vector<CanonicalHeader>& headers) {
    std::string out;
    for (const auto& h : headers) {
        if (!out.empty()) out += ';';
        out += h.name;
    }
    return out;
}

}  // namespace

bool is_s3_service(std::string_view service) {
    // s3-object-lambda and s3-outposts keep S3's path rules; s3express too.
    return service == "s3" || service.starts_with("s3-") || service == "s3express";
}

std::string canonical_uri(std::string_view path, bool s3) {
    std::string out;
    out.reserve(path.size() + path.size() / 2 + 1);
    if (s3) {
        append_s3_path(out, path);
        if (out.empty()) out = "/";
    } else {
        append_encoded_path(out, normalised_path(path));
    }
    return out;
}

std::string canonical_query(std::string_view query) {
    std::vector<std::pair<std::string, std::string>> params;
    std::size_t start = 0;
    while (start <= query.size()) {
        std::size_t end = query.find('&', start);
        if (end == std::string_view::npos) end = query.size();
        const std::string_view pair = query.substr(start, end - start);
        if (!pair.empty()) {
            const std::size_t eq = pair.find('=');
            const std::string_view name = pair.substr(0, eq);
            const std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
            params.emplace_back(percent_encode(percent_decoded(name)), percent_encode(percent_decoded(value)));
        }
        start = end + 1;
    }
    std::sort(params.begin(), params.end());
    std::string out;
    for (const auto& [name, value] : params) {
        if (!out.empty()) out += '&';
        out += name;
        out += '=';
        out += value;
    }
    return out;
}

std::string signed_header_list(const std::vector<std::pair<std::string, std::string>>& signed_headers) {
    return list_of_names(canonical_headers(signed_headers));
}

std::string canonical_request(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& signed_headers,
                              std::string_view payload_hash, bool s3) {
    const std::size_t question = target.find('?');
    const std::string_view path = target.substr(0, question);
    const std::string_view query =
        question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
    std::vector<CanonicalHeader> headers = canonical_headers(signed_headers);

    // Reserved up front so that no reallocation leaves a header value behind.
    std::size_t size = method.size() + 3 * target.size() + payload_hash.size() + 8;
    for (const auto& h : headers) size += 2 * h.name.size() + h.value.size() + 3;
    std::string out;
    out.reserve(size);
    out.append(method);
    out += '\n';
    out += canonical_uri(path, s3);
    out += '\n';
    out += canonical_query(query);
    out += '\n';
    for (const auto& h : headers) {
        out += h.name;
        out += ':';
        out += h.value;
        out += '\n';
    }
    out += '\n';
    out += list_of_names(headers);
    out += '\n';
    out.append(payload_hash);
    wipe_values(headers);
    return out;
}

}  // namespace vaultgate::sigv4
