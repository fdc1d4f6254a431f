// Credential injection: rewrites a parsed request head so that the bound origin
// sees exactly one copy of the credential, whatever the sandbox sent.
//
// Secret bytes are written straight into the storage they end up in (the header
// value inside RequestHead, or RequestHead::target), with the capacity reserved
// up front, so no reallocation leaves a stray copy in freed memory. Those fields
// are plain std::string: the caller owns the head and must wipe_string() the
// injected value and the target after serialising it. Temporaries that held the
// secret here are wiped before they are released.
#include "vaultgate/credentials/inject.hpp"

#include "vaultgate/http/syntax.hpp"
#include "vaultgate/util/encoding.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace vaultgate {

namespace {

constexpr std::string_view default_api_key_header = "x-api-key";
constexpr std::string_view authorization_header = "Authorization";
constexpr std::string_view secret_marker = "{secret}";

char fold_field_char(char c) {
    if (c >= 'A' && c <= 'Z') return static_cast<char>(c + ('a' - 'A'));
    // Some servers (CGI-style frameworks, nginx with underscores_in_headers) treat
    // '_' and '-' alike, so X_Api_Key would reach the origin as a second copy.
    if (c == '_') return '-';
    return c;
}

bool same_field(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (fold_field_char(a[i]) != fold_field_char(b[i])) return false;
    return true;
}

// The header name comes from configuration, but a bad one would make us emit a
// malformed request, so it is checked here as well.
void require_token(std::string_view name, const char* what) {
    if (!syntax::is_token(name)) throw std::invalid_argument(std::string(what) + " is not a valid header field name");
}

// A secret or template with CR, LF, NUL or another control byte would split or
// corrupt the serialised head. The message never includes the offending value.
void require_field_value(std::string_view value, const char* what) {
    for (char ch : value) {
        auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            throw std::invalid_argument(std::string(what) + " contains bytes that are not allowed in a header field");
    }
}

// Compares a raw query parameter name with the configured one after
// percent-decoding, so that "api%5Fkey" cannot slip a second copy past us to an
// origin that decodes names before looking them up.
bool same_param(std::string_view raw, std::string_view param) {
    std::size_t j = 0;
    for (std::size_t i = 0; i < raw.size(); ++i, ++j) {
        char c = raw[i];
        if (const auto escaped = percent_escape_at(raw, i)) {
            c = static_cast<char>(*escaped);
            i += 2;
        }
        if (j >= param.size() || param[j] != c) return false;
    }
    return j == param.size();
}

std::size_t count_markers(std::string_view tpl) {
    std::size_t n = 0;
    for (std::size_t pos = tpl.find(secret_marker); pos != std::string_view::npos;
         pos = tpl.find(secret_marker, pos + secret_marker.size()))
        ++n;
    return n;
}

std::string_view effective_template(const AuthSpec& spec) {
    // An empty template would inject an empty credential; the plain secret is
    // the only reading that makes sense.
    return spec.value_template.empty() ? secret_marker : std::string_view(spec.value_template);
}

// Refuses inputs that would corrupt the serialised head, before anything in
// the head is touched.
void check_inputs(const AuthSpec& spec, std::string_view secret) {
    switch (spec.type) {
        case AuthType::api_key:
        case AuthType::bearer:
            require_field_value(secret, "credential value");
            return;
        case AuthType::basic:
            // base64 hides every byte of user and secret, so only the separator matters.
            if (spec.user.find(':') != std::string::npos)
                throw std::invalid_argument("basic auth user must not contain ':'");
            return;
        case AuthType::header:
            require_field_value(effective_template(spec), "header template");
            require_field_value(secret, "credential value");
            return;
        case AuthType::query:
            return;
        case AuthType::aws_sigv4:
        case AuthType::oauth2_client_credentials:
        case AuthType::github_app:
        case AuthType::jwt_bearer:
            // Signed and minted credentials are never injected as stored.
            throw std::invalid_argument("auth type " + std::string(auth_type_name(spec.type)) +
                                        " injects no stored value");
    }
}

// Writes the header value for spec into `out`, which must be empty. The
// capacity is reserved first so that the secret is written exactly once.
void build_value(std::string& out, const AuthSpec& spec, std::string_view secret) {
    check_inputs(spec, secret);
    switch (spec.type) {
        case AuthType::api_key:
            out.reserve(secret.size());
            out.append(secret);
            return;
        case AuthType::bearer: {
            constexpr std::string_view prefix = "Bearer ";
            out.reserve(prefix.size() + secret.size());
            out.append(prefix);
            out.append(secret);
            return;
        }
        case AuthType::basic: {
            std::string pair;
            pair.reserve(spec.user.size() + 1 + secret.size());
            pair.append(spec.user);
            pair.push_back(':');
            pair.append(secret);

            constexpr std::string_view prefix = "Basic ";
            out.reserve(prefix.size() + base64_size(pair.size()));
            out.append(prefix);
            append_base64(out, pair, Base64Alphabet::standard, true);
            wipe_string(pair);
            return;
        }
        case AuthType::header: {
            std::string_view tpl = effective_template(spec);
            std::size_t markers = count_markers(tpl);
            out.reserve(tpl.size() - markers * secret_marker.size() + markers * secret.size());
            std::size_t from = 0;
            for (std::size_t pos = tpl.find(secret_marker); pos != std::string_view::npos;
                 pos = tpl.find(secret_marker, from)) {
                out.append(tpl.substr(from, pos - from));
                out.append(secret);
                from = pos + secret_marker.size();
            }
            out.append(tpl.substr(from));
            return;
        }
        case AuthType::query:
            out.reserve(percent_encoded_size(secret));
            append_percent_encoded(out, secret);
            return;
        case AuthType::aws_sigv4:
        case AuthType::oauth2_client_credentials:
        case AuthType::github_app:
        case AuthType::jwt_bearer:
            return;  // refused by check_inputs
    }
}

void inject_header(RequestHead& head, const AuthSpec& spec, std::string_view secret) {
    std::string name = spec.target_header();
    require_token(name, "auth header");
    check_inputs(spec, secret);

    // Removed values may hold an earlier injection (a re-injected head), so they
    // are wiped before the vector lets go of them.
    for (auto& h : head.headers)
        if (same_field(h.name, name)) wipe_string(h.value);
    std::erase_if(head.headers, [&](const Header& h) { return same_field(h.name, name); });

    head.headers.push_back(Header{std::move(name), {}});
    std::string& value = head.headers.back().value;
    try {
        build_value(value, spec, secret);
    } catch (...) {
        head.headers.pop_back();
        throw;
    }
}

void inject_query(RequestHead& head, const AuthSpec& spec, std::string_view secret) {
    const std::string& param = spec.param;
    if (param.empty()) throw std::invalid_argument("query auth needs a parameter name");

    // The old target holds the sandbox's placeholder (or, for a head injected
    // twice, an earlier secret); it is wiped once the new one is written.
    std::string old = std::move(head.target);
    head.target.clear();

    std::string_view target = old;
    if (auto hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
    std::string_view path = target;
    std::string_view query;
    if (auto q = target.find('?'); q != std::string_view::npos) {
        path = target.substr(0, q);
        query = target.substr(q + 1);
    }

    // Pieces kept verbatim, with the slot where the one injected parameter goes.
    std::vector<std::string_view> pieces;
    std::size_t slot = std::string_view::npos;
    if (!query.empty()) {
        std::size_t from = 0;
        while (true) {
            std::size_t amp = query.find('&', from);
            std::string_view piece = query.substr(from, amp == std::string_view::npos ? amp : amp - from);
            std::string_view piece_name = piece.substr(0, piece.find('='));
            if (same_param(piece_name, param)) {
                if (slot == std::string_view::npos) {
                    slot = pieces.size();
                    pieces.emplace_back();  // placeholder for the injected parameter
                }
            } else {
                pieces.push_back(piece);
            }
            if (amp == std::string_view::npos) break;
            from = amp + 1;
        }
    }
    if (slot == std::string_view::npos) {
        slot = pieces.size();
        pieces.emplace_back();
    }

    std::size_t injected_size = percent_encoded_size(param) + 1 + percent_encoded_size(secret);
    std::size_t total = path.size() + 1 + (pieces.size() - 1) + injected_size;
    for (auto p : pieces) total += p.size();

    std::string& out = head.target;
    out.reserve(total);
    out.append(path);
    out.push_back('?');
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (i > 0) out.push_back('&');
        if (i == slot) {
            append_percent_encoded(out, param);
            out.push_back('=');
            append_percent_encoded(out, secret);
        } else {
            out.append(pieces[i]);
        }
    }
    wipe_string(old);
}

}  // namespace

void inject_credential(RequestHead& head, const AuthSpec& spec, const Secret& secret) {
    if (spec.type == AuthType::query)
        inject_query(head, spec, secret.reveal());
    else
        inject_header(head, spec, secret.reveal());
}

Secret injected_value(const AuthSpec& spec, const Secret& secret) {
    // For query auth this is the URL-encoded value as it appears in the target.
    std::string value;
    build_value(value, spec, secret.reveal());
    Secret result(std::move(value));
    // A short value lives in the string's inline buffer, which a move copies
    // rather than steals; wipe what the move left behind.
    wipe_string(value);
    return result;
}

}  // namespace vaultgate
