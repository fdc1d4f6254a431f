// The journal's records: one StoreChange with the item it writes, as JSON,
// and its replay onto the data read from the snapshot.
#include "payload_codec.hpp"

#include <algorithm>
#include <array>

namespace vaultgate {

namespace {

using namespace payload;
using Kind = StoreChange::Kind;

constexpr std::array<std::pair<Kind, std::string_view>, 9> kind_names = {{
    {Kind::add_vault, "add_vault"},
    {Kind::remove_vault, "remove_vault"},
    {Kind::add_credential, "add_credential"},
    {Kind::rotate_credential, "rotate_credential"},
    {Kind::remove_credential, "remove_credential"},
    {Kind::add_service, "add_service"},
    {Kind::remove_service, "remove_service"},
    {Kind::add_session, "add_session"},
    {Kind::remove_sessions, "remove_sessions"},
}};

std::string_view name_of(Kind kind) {
    for (const auto& [k, name] : kind_names)
        if (k == kind) return name;
    throw PayloadError{"journal: unknown change"};
}

Kind kind_named(std::string_view name) {
    for (const auto& [k, n] : kind_names)
        if (n == name) return k;
    payload_fail("journal record", "unknown change '" + std::string(name) + "'");
}

// New items are appended, so a search from the back finds them at once.
template <class T, class Key>
const T& newest(const std::vector<T>& items, const Key& key, std::string T::*field) {
    const auto it = std::find_if(items.rbegin(), items.rend(), [&](const T& item) { return item.*field == key; });
    if (it == items.rend()) throw PayloadError{"journal: the change names an item that is not in the data"};
    return *it;
}

template <class T>
void erase_named(std::vector<T>& items, const std::string& key, std::string T::*field) {
    std::erase_if(items, [&](const T& item) { return item.*field == key; });
}

template <class T>
void replace_or_append(std::vector<T>& items, T item, std::string T::*field) {
    const auto it = std::find_if(items.begin(), items.end(), [&](const T& i) { return i.*field == item.*field; });
    if (it != items.end())
        *it = std::move(item);
    else
        items.push_back(std::move(item));
}

json item_tree(const StoreChange& change, const StoreData& next) {
    switch (change.kind) {
        case Kind::add_vault:
            return vault_tree(newest(next.vaults, change.vault_id, &StoredVault::id));
        case Kind::add_credential:
        case Kind::rotate_credential:
            return credential_tree(newest(newest(next.vaults, change.vault_id, &StoredVault::id).credentials,
                                          change.key, &StoredCredential::name));
        case Kind::add_service:
            return service_tree(
                newest(newest(next.vaults, change.vault_id, &StoredVault::id).services, change.key, &StoredService::id));
        case Kind::add_session:
            return session_tree(newest(next.sessions, change.key, &StoredSession::id));
        default:
            return nullptr;  // a removal names its keys only
    }
}

}  // namespace

WipedBytes encode_change(const StoreChange& change, const StoreData& next) {
    json record = {{"generation", next.generation},
                   {"change", name_of(change.kind)},
                   {"vault_id", change.vault_id},
                   {"key", change.key},
                   {"keys", change.keys}};
    record["item"] = item_tree(change, next);
    return tree_text(record);
}

void ChangeReplay::apply(std::string_view text) {
    with_parsed_tree(text, [&](const json& record) {
        const auto generation = u64_member(record, "generation", "journal record");
        if (generation != data_.generation + 1)
            payload_fail("journal record", "generation " + std::to_string(generation) + " does not follow " +
                                               std::to_string(data_.generation) + " (a record is missing)");
        const auto kind = kind_named(string_member(record, "change", "journal record"));
        const auto vault_id = string_member(record, "vault_id", "journal record");
        const auto key = string_member(record, "key", "journal record");
        const auto& item = member(record, "item", "journal record");
        const auto vault = [&]() -> StoredVault& {
            const auto it = std::find_if(data_.vaults.begin(), data_.vaults.end(),
                                         [&](const StoredVault& v) { return v.id == vault_id; });
            if (it == data_.vaults.end()) payload_fail("journal record", "names a vault the store does not hold");
            return *it;
        };
        switch (kind) {
            case Kind::add_vault:
                replace_or_append(data_.vaults, vault_from_tree(item, "journal record.item"), &StoredVault::id);
                break;
            case Kind::remove_vault:
                erase_named(data_.vaults, vault_id, &StoredVault::id);
                break;
            case Kind::add_credential:
            case Kind::rotate_credential:
                replace_or_append(vault().credentials, credential_from_tree(item, "journal record.item"),
                                  &StoredCredential::name);
                break;
            case Kind::remove_credential:
                erase_named(vault().credentials, key, &StoredCredential::name);
                break;
            case Kind::add_service:
                // Ids are random and new: appended without a search.
                vault().services.push_back(service_from_tree(item, "journal record.item"));
                break;
            case Kind::remove_service:
                erase_named(vault().services, key, &StoredService::id);
                break;
            case Kind::add_session:
                data_.sessions.push_back(session_from_tree(item, "journal record.item"));
                if (indexed_) {
                    session_index_[data_.sessions.back().id] = data_.sessions.size() - 1;
                    removed_.push_back(false);
                }
                break;
            case Kind::remove_sessions:
                for (const auto& id : array_member(record, "keys", "journal record")) {
                    if (!id.is_string()) payload_fail("journal record.keys", "expected strings");
                    remove_session(id.get<std::string>());
                }
                break;
        }
        data_.generation = generation;
        return 0;
    });
}

void ChangeReplay::remove_session(const std::string& id) {
    if (!indexed_) {
        indexed_ = true;
        removed_.assign(data_.sessions.size(), false);
        for (std::size_t i = 0; i < data_.sessions.size(); ++i) session_index_[data_.sessions[i].id] = i;
    }
    const auto it = session_index_.find(id);
    if (it == session_index_.end()) return;
    removed_[it->second] = true;
    session_index_.erase(it);
}

void ChangeReplay::finish() {
    if (!indexed_) return;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < data_.sessions.size(); ++i)
        if (!removed_[i]) {
            if (kept != i) data_.sessions[kept] = std::move(data_.sessions[i]);
            ++kept;
        }
    data_.sessions.erase(data_.sessions.begin() + static_cast<std::ptrdiff_t>(kept), data_.sessions.end());
    indexed_ = false;
    removed_.clear();
    session_index_.clear();
}

}  // namespace vaultgate
