#include "vaultgate/minting/service_account.hpp"

#include "vaultgate/minting/jwt.hpp"
#include "wiped_json.hpp"

#include <cctype>

namespace vaultgate::minting {

namespace {

// Names the field, never its value: the JSON holds the private key.
[[noreturn]] void bad_field(const char* field, const char* problem) {
    throw MintError(std::string("the service-account key's \"") + field + "\" " + problem);
}

const WipedString& required_string(const WipedJson& key, const char* field) {
    if (!key.contains(field)) bad_field(field, "is missing");
    const WipedString* value = string_member(key, field);
    if (!value) bad_field(field, "is not a string");
    if (value->empty()) bad_field(field, "is empty");
    return *value;
}

bool is_https_url(std::string_view url) {
    constexpr std::string_view scheme = "https://";
    if (url.size() <= scheme.size()) return false;
    for (std::size_t i = 0; i < scheme.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
    return true;
}

}  // namespace

ServiceAccountKey parse_service_account(const Secret& json_text) {
    const auto tree = parse_wiped_json(json_text);
    if (!tree) throw MintError("the service-account key is not valid JSON");
    if (!tree->is_object()) throw MintError("the service-account key is not a JSON object");
    const WipedJson& key = *tree;

    // Other Google credential files (authorized_user, external_account) have no private key to sign with.
    if (key.contains("type")) {
        const WipedString* type = string_member(key, "type");
        if (!type || *type != "service_account") bad_field("type", "is not service_account");
    }
    ServiceAccountKey out;
    const auto& email = required_string(key, "client_email");
    out.client_email.assign(email.data(), email.size());
    out.private_key = to_secret(required_string(key, "private_key"));
    if (key.contains("token_uri")) {
        const auto& uri = required_string(key, "token_uri");
        if (!is_https_url({uri.data(), uri.size()})) bad_field("token_uri", "is not an https URL");
        out.token_uri.assign(uri.data(), uri.size());
    } else {
        out.token_uri = google_token_uri;
    }
    if (key.contains("private_key_id")) {
        const WipedString* id = string_member(key, "private_key_id");
        if (!id) bad_field("private_key_id", "is not a string");
        out.key_id.assign(id->data(), id->size());
    }
    try {
        check_rs256_key(out.private_key);
    } catch (const MintError&) {
        bad_field("private_key", "is not an unencrypted RSA private key in PEM of 2048 bits or more");
    }
    return out;
}

}  // namespace vaultgate::minting
