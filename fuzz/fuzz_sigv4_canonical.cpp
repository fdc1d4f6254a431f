// Fuzzes the SigV4 canonicaliser, inspect(), the scope derivation and
// sign_request. The input is "METHOD\nTARGET\nName: value\n...": a request as
// the proxy would hand it over. A canonical request that two readers could
// build differently from the same bytes is a signature AWS rejects, or worse,
// one that covers a request other than the one sent; so besides "no crash",
// the invariants are the shapes AWS's canonical form guarantees.
#include "fuzz_check.hpp"

#include "vaultgate/signing/sigv4.hpp"
#include "vaultgate/util/encoding.hpp"

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace vaultgate;
using namespace vaultgate::sigv4;
using vaultgate::fuzz::as_view;
using vaultgate::fuzz::is_plain_reason;

namespace {

bool is_upper_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

bool unreserved(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

// Only unreserved bytes, the given separators and upper-case %XX escapes of
// bytes that are not unreserved (an escape of an unreserved byte would make
// two spellings of one request).
bool encoded_with(std::string_view s, std::string_view separators) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (unreserved(c) || separators.find(c) != std::string_view::npos) continue;
        if (c != '%' || i + 2 >= s.size() || !is_upper_hex(s[i + 1]) || !is_upper_hex(s[i + 2])) return false;
        const int byte = hex_digit_value(s[i + 1]) * 16 + hex_digit_value(s[i + 2]);
        if (unreserved(static_cast<char>(byte))) return false;
        i += 2;
    }
    return true;
}

void check_uri(std::string_view path) {
    const std::string s3 = canonical_uri(path, true);
    FUZZ_CHECK(!s3.empty() && encoded_with(s3, "/"));
    FUZZ_CHECK(canonical_uri(s3, true) == s3);  // a fixed point: nothing is decoded into a separator

    const std::string other = canonical_uri(path, false);
    FUZZ_CHECK(!other.empty() && encoded_with(other, "/"));
    if (!path.empty() && path.front() == '/') {
        FUZZ_CHECK(other.front() == '/');
        FUZZ_CHECK(other.find("//") == std::string::npos);
        FUZZ_CHECK(other.find("/./") == std::string::npos && other.find("/../") == std::string::npos);
        FUZZ_CHECK(!other.ends_with("/.") && !other.ends_with("/.."));
    }
}

void check_query(std::string_view query) {
    const std::string q = canonical_query(query);
    FUZZ_CHECK(encoded_with(q, "=&"));
    FUZZ_CHECK(canonical_query(q) == q);
    // Every parameter has exactly one '=' and they are in order.
    std::string_view rest = q, previous;
    bool first = true;
    while (!rest.empty()) {
        const std::size_t amp = rest.find('&');
        const std::string_view param = rest.substr(0, amp);
        const std::size_t eq = param.find('=');
        FUZZ_CHECK(eq != std::string_view::npos && param.find('=', eq + 1) == std::string_view::npos);
        if (!first) {
            const std::string_view prev_name = previous.substr(0, previous.find('='));
            const std::string_view name = param.substr(0, eq);
            FUZZ_CHECK(prev_name < name ||
                       (prev_name == name && previous.substr(prev_name.size()) <= param.substr(name.size())));
        }
        first = false;
        previous = param;
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
    }
}

struct Parsed {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
};

Parsed parse(std::string_view in) {
    Parsed p;
    std::size_t line = 0;
    while (!in.empty()) {
        const std::size_t nl = in.find('\n');
        const std::string_view text = in.substr(0, nl);
        if (line == 0) {
            p.method = text;
        } else if (line == 1) {
            p.target = text;
        } else if (p.headers.size() < 64) {
            const std::size_t colon = text.find(':');
            std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
            p.headers.emplace_back(std::string(text.substr(0, colon)), std::string(value));
        }
        ++line;
        if (nl == std::string_view::npos) break;
        in.remove_prefix(nl + 1);
    }
    return p;
}

void check_canonical_request(const Parsed& p, bool s3) {
    const std::string payload(64, 'a');
    const std::string c = canonical_request(p.method, p.target, p.headers, payload, s3);
    FUZZ_CHECK(c.starts_with(p.method + "\n"));
    FUZZ_CHECK(c.ends_with("\n" + payload));
    const std::string list = signed_header_list(p.headers);
    FUZZ_CHECK(c.ends_with("\n" + list + "\n" + payload));
    // Sorted, lower-case, each name once (when no name holds the separator).
    for (const auto& [name, value] : p.headers)
        if (name.find(';') != std::string::npos) return;
    std::string_view rest = list, previous;
    bool first = true;
    while (!list.empty()) {
        const std::size_t semi = rest.find(';');
        const std::string_view name = rest.substr(0, semi);
        for (char ch : name) FUZZ_CHECK(!(ch >= 'A' && ch <= 'Z'));
        if (!first) FUZZ_CHECK(previous < name);
        first = false;
        previous = name;
        if (semi == std::string_view::npos) break;
        rest.remove_prefix(semi + 1);
    }
}

RequestHead head_of(const Parsed& p) {
    RequestHead head;
    head.method = p.method;
    head.target = p.target;
    for (const auto& [name, value] : p.headers) head.headers.push_back({name, value});
    return head;
}

void check_inspect(const RequestHead& head) {
    const Inspection r = inspect(head);
    const int outcomes = !r.unsupported.empty() + !r.payload_hash.empty() + r.hash_body;
    FUZZ_CHECK(outcomes == 1);
    if (!r.unsupported.empty()) FUZZ_CHECK(is_plain_reason(r.unsupported, 200));
    if (!r.payload_hash.empty()) FUZZ_CHECK(is_payload_hash(r.payload_hash));
}

void check_scope(std::string_view host) {
    std::string why;
    const std::optional<Scope> scope = derive_scope(host, "", "", &why);
    if (!scope) {
        FUZZ_CHECK(is_plain_reason(why, 200));
        return;
    }
    for (const std::string* part : {&scope->region, &scope->service}) {
        FUZZ_CHECK(!part->empty());
        for (char c : *part) FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
    }
}

const Secret fuzz_secret("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
const Secret fuzz_token("FwoGZXIvYXdzEXAMPLE");

void check_sign(RequestHead head, bool s3) {
    const Scope scope{"us-east-1", s3 ? "s3" : "service"};
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));
    try {
        sign_request(head, scope, Keys{"AKIDEXAMPLE", fuzz_secret, s3 ? &fuzz_token : nullptr}, unsigned_payload, now);
    } catch (const std::invalid_argument& e) {
        FUZZ_CHECK(is_plain_reason(e.what(), 200));
        return;
    }
    FUZZ_CHECK(head.count("authorization") == 1 && head.count("x-amz-date") == 1);
    FUZZ_CHECK(head.count("x-amz-security-token") == (s3 ? 1u : 0u));
    // The signature covers the head as it now stands.
    const std::string date(*head.get("x-amz-date"));
    const auto headers = signed_headers(head);
    const std::string canonical = canonical_request(head.method, head.target, headers, unsigned_payload, s3);
    const std::string expected =
        authorization_value("AKIDEXAMPLE", date, scope, signed_header_list(headers),
                            signature(fuzz_secret, date, scope, string_to_sign(date, scope, canonical)));
    FUZZ_CHECK(*head.get("authorization") == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return 0;
    const std::string_view in = as_view(data, size);
    const Parsed p = parse(in);
    const std::size_t question = p.target.find('?');
    check_uri(std::string_view(p.target).substr(0, question));
    if (question != std::string::npos) check_query(std::string_view(p.target).substr(question + 1));
    check_canonical_request(p, false);
    check_canonical_request(p, true);
    const RequestHead head = head_of(p);
    check_inspect(head);
    check_scope(p.target);
    check_sign(head, false);
    check_sign(head, true);
    return 0;
}
