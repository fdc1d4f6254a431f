#include "payload_codec.hpp"

#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/json_wipe.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>

namespace vaultgate::payload {

using nlohmann::json;

[[noreturn]] void payload_fail(const std::string& where, const std::string& what) {
    throw PayloadError{where + ": " + what};
}

const json& member(const json& obj, std::string_view key, const std::string& where) {
    if (!obj.is_object()) payload_fail(where, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) payload_fail(where, "missing '" + std::string(key) + "'");
    return *it;
}

std::string string_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_string()) payload_fail(where + "." + std::string(key), "expected a string");
    return v.get<std::string>();
}

std::uint64_t u64_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_number_unsigned()) payload_fail(where + "." + std::string(key), "expected an unsigned integer");
    return v.get<std::uint64_t>();
}

std::int64_t i64_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_number_integer()) payload_fail(where + "." + std::string(key), "expected an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
        payload_fail(where + "." + std::string(key), "out of range");
    return v.get<std::int64_t>();
}

const json& array_member(const json& obj, std::string_view key, const std::string& where) {
    const auto& v = member(obj, key, where);
    if (!v.is_array()) payload_fail(where + "." + std::string(key), "expected a list");
    return v;
}

json vault_tree(const StoredVault& v) {
    json credentials = json::array();
    for (const auto& c : v.credentials) credentials.push_back(credential_tree(c));
    json services = json::array();
    for (const auto& s : v.services) services.push_back(service_tree(s));
    return {{"id", v.id},
            {"name", v.name},
            {"created_at_ms", v.created_at_ms},
            {"credentials", std::move(credentials)},
            {"services", std::move(services)}};
}

json credential_tree(const StoredCredential& c) {
    // base64 so that any byte string survives JSON, which must be UTF-8.
    std::string encoded = base64_encode(c.value.reveal(), Base64Alphabet::standard, true);
    json entry = {{"name", c.name}, {"version", c.version}, {"updated_at_ms", c.updated_at_ms}};
    entry["value"] = std::move(encoded);  // moves the heap block: no copy to wipe
    wipe_string(encoded);
    return entry;
}

json service_tree(const StoredService& s) { return {{"id", s.id}, {"config", service_to_json(s.config)}}; }

json session_tree(const StoredSession& s) {
    json entry = {{"id", s.id},
                  {"token_digest", s.token_digest},
                  {"vault_ids", s.vault_ids},
                  {"policy", policy_to_json(s.policy)},
                  {"policy_name", s.policy.name},
                  {"expires_at_ms", s.expires_at_ms}};
    entry["source"] = s.source ? json(cidr_text(*s.source)) : json(nullptr);
    entry["created_at_ms"] = s.created_at_ms;
    return entry;
}

StoredVault vault_from_tree(const json& v, const std::string& where) {
    StoredVault vault;
    vault.id = string_member(v, "id", where);
    vault.name = string_member(v, "name", where);
    vault.created_at_ms = i64_member(v, "created_at_ms", where);
    const auto& credentials = array_member(v, "credentials", where);
    for (std::size_t k = 0; k < credentials.size(); ++k)
        vault.credentials.push_back(
            credential_from_tree(credentials[k], where + ".credentials[" + std::to_string(k) + "]"));
    const auto& services = array_member(v, "services", where);
    for (std::size_t k = 0; k < services.size(); ++k)
        vault.services.push_back(service_from_tree(services[k], where + ".services[" + std::to_string(k) + "]"));
    return vault;
}

StoredCredential credential_from_tree(const json& c, const std::string& where) {
    StoredCredential cred;
    cred.name = string_member(c, "name", where);
    cred.version = u64_member(c, "version", where);
    cred.updated_at_ms = i64_member(c, "updated_at_ms", where);
    const auto& value = member(c, "value", where);
    if (!value.is_string()) payload_fail(where + ".value", "expected a string");
    auto raw = base64_decode(value.get_ref<const std::string&>());
    if (!raw) payload_fail(where + ".value", "not valid base64");
    cred.value = Secret(*raw);
    wipe_string(*raw);
    return cred;
}

StoredService service_from_tree(const json& s, const std::string& where) {
    StoredService svc;
    svc.id = string_member(s, "id", where);
    std::string why;
    auto config = service_from_json(member(s, "config", where), &why);
    if (!config) payload_fail(where + ".config", why);
    svc.config = std::move(*config);
    return svc;
}

StoredSession session_from_tree(const json& s, const std::string& where) {
    StoredSession session;
    session.id = string_member(s, "id", where);
    session.token_digest = string_member(s, "token_digest", where);
    const auto& ids = array_member(s, "vault_ids", where);
    for (const auto& id : ids) {
        if (!id.is_string()) payload_fail(where + ".vault_ids", "expected strings");
        session.vault_ids.push_back(id.get<std::string>());
    }
    std::string why;
    auto policy = policy_from_json(member(s, "policy", where), &why);
    if (!policy) payload_fail(where + ".policy", why);
    session.policy = std::move(*policy);
    session.policy.name = string_member(s, "policy_name", where);
    session.expires_at_ms = i64_member(s, "expires_at_ms", where);
    const auto& source = member(s, "source", where);
    if (!source.is_null()) {
        if (!source.is_string()) payload_fail(where + ".source", "expected a string or null");
        session.source = parse_cidr(source.get<std::string>());
        if (!session.source) payload_fail(where + ".source", "not a CIDR");
    }
    // Absent from stores written before the creation time was kept.
    if (s.contains("created_at_ms")) session.created_at_ms = i64_member(s, "created_at_ms", where);
    return session;
}

WipedBytes tree_text(json& tree) {
    JsonWiper wipe_tree{tree};
    WipedStreamBuf text;
    {
        std::ostream out(&text);
        try {
            out << tree;
        } catch (const json::exception& e) {
            // Invalid UTF-8 in a name; values are base64 and cannot cause it.
            throw PayloadError{std::string("cannot encode the store: ") + e.what()};
        }
    }
    return std::move(text.bytes());
}

json parse_tree(std::string_view text) {
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::exception&) {
        // Authentic yet unreadable: written by something other than this
        // version of vaultgate. The parser's message could quote payload text.
        throw PayloadError{"the payload is not valid JSON"};
    }
}

}  // namespace vaultgate::payload

namespace vaultgate {

namespace {

using namespace payload;

json payload_tree(const StoreData& data) {
    json vaults = json::array();
    for (const auto& v : data.vaults) vaults.push_back(vault_tree(v));
    json sessions = json::array();
    for (const auto& s : data.sessions) sessions.push_back(session_tree(s));
    return {{"generation", data.generation}, {"vaults", std::move(vaults)}, {"sessions", std::move(sessions)}};
}

StoreData data_from_tree(const json& root) {
    StoreData data;
    // Stores written before the generation was kept read as generation 0; the
    // next save writes one.
    if (root.is_object() && !root.contains("generation"))
        data.generation = 0;
    else
        data.generation = u64_member(root, "generation", "payload");
    const auto& vaults = array_member(root, "vaults", "payload");
    for (std::size_t i = 0; i < vaults.size(); ++i)
        data.vaults.push_back(vault_from_tree(vaults[i], "vaults[" + std::to_string(i) + "]"));
    const auto& sessions = array_member(root, "sessions", "payload");
    data.sessions.reserve(sessions.size());
    for (std::size_t i = 0; i < sessions.size(); ++i)
        data.sessions.push_back(session_from_tree(sessions[i], "sessions[" + std::to_string(i) + "]"));
    return data;
}

}  // namespace

WipedBytes encode_payload(const StoreData& data) {
    json payload = payload_tree(data);
    return tree_text(payload);
}

StoreData decode_payload(std::string_view text) {
    return with_parsed_tree(text, [](const json& root) { return data_from_tree(root); });
}

}  // namespace vaultgate
