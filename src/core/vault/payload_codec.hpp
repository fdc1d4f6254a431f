#pragma once
// The payload of the file store: StoreData as the JSON text that is encrypted,
// and back; and the trees of single items that the journal's records
// (change_codec.cpp) are made of. The JSON tree and the text both hold
// credential values (base64), and both are wiped before they are released.
// nlohmann's own scratch space (the parser's token buffer, the serialiser's
// 512-byte chunk buffer) is out of reach; being base64, any remnant there is
// encoded, not raw.
#include "vaultgate/state/store.hpp"
#include "vaultgate/util/json_wipe.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vaultgate {

// What is wrong with a payload, or why it cannot be encoded. The store adds
// its path. Messages name fields, never values.
struct PayloadError {
    std::string message;
};

// The JSON text of `data`. Throws PayloadError.
WipedBytes encode_payload(const StoreData& data);

// `text` read back. Throws PayloadError; the text is not quoted in it.
StoreData decode_payload(std::string_view text);

// One change as a journal record: its generation (next.generation), what it
// changes, and the item it adds or replaces as it is in `next`. Throws
// PayloadError.
WipedBytes encode_change(const StoreChange& change, const StoreData& next);

// Applies journal records, in order, to the data they were written after. A
// record whose generation is not the one after the data's is refused
// (PayloadError): a record lost or out of order would leave the data wrong.
// Session removals are collected and done once in finish(), so that replaying
// many records costs no more than reading them.
class ChangeReplay {
public:
    explicit ChangeReplay(StoreData& data) : data_(data) {}
    void apply(std::string_view record);
    void finish();

private:
    void remove_session(const std::string& id);

    StoreData& data_;
    bool indexed_ = false;  // the index is built on the first session removal
    std::unordered_map<std::string, std::size_t> session_index_;
    std::vector<bool> removed_;
};

namespace payload {

using nlohmann::json;

struct JsonWiper {
    json& j;
    ~JsonWiper() { wipe_json_strings(j); }
};

// `tree` as text; the tree is wiped. Throws PayloadError.
WipedBytes tree_text(json& tree);
// `text` parsed, handed to `read` and wiped after it. Throws PayloadError
// (a parse error's message could quote the text, so it is not passed on).
json parse_tree(std::string_view text);
template <class Read>
auto with_parsed_tree(std::string_view text, Read&& read) {
    json root = parse_tree(text);
    JsonWiper wipe_root{root};
    try {
        return read(std::as_const(root));
    } catch (const json::exception&) {
        throw PayloadError{"the payload is not valid JSON"};
    }
}

// Readers of one field; `where` names the place in messages. Throw PayloadError.
[[noreturn]] void payload_fail(const std::string& where, const std::string& what);
const json& member(const json& obj, std::string_view key, const std::string& where);
std::string string_member(const json& obj, std::string_view key, const std::string& where);
std::uint64_t u64_member(const json& obj, std::string_view key, const std::string& where);
std::int64_t i64_member(const json& obj, std::string_view key, const std::string& where);
const json& array_member(const json& obj, std::string_view key, const std::string& where);

json vault_tree(const StoredVault& v);
json credential_tree(const StoredCredential& c);
json service_tree(const StoredService& s);
json session_tree(const StoredSession& s);
StoredVault vault_from_tree(const json& v, const std::string& where);
StoredCredential credential_from_tree(const json& c, const std::string& where);
StoredService service_from_tree(const json& s, const std::string& where);
StoredSession session_from_tree(const json& s, const std::string& where);

}  // namespace payload
}  // namespace vaultgate
