#pragma once
// The vaults and sessions of a GatewayState, by name and id, shared between
// snapshots: the table is split into shards that snapshots hold by shared
// pointer, so copying a table copies the pointers, and a change copies the
// one shard it touches (copy on write). A session created or revoked then
// costs a few hundred sessions' worth of copying whatever the table holds,
// where a map copied whole cost all of them. Iteration visits every entry
// once, in no particular order.
#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace vaultgate {

template <class Value>
class ShardedTable {
public:
    using Map = std::map<std::string, Value, std::less<>>;
    using value_type = typename Map::value_type;
    static constexpr std::size_t shard_count = 256;

    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = typename Map::value_type;
        using difference_type = std::ptrdiff_t;
        using pointer = const value_type*;
        using reference = const value_type&;

        const_iterator() = default;
        reference operator*() const { return *it_; }
        pointer operator->() const { return &*it_; }
        const_iterator& operator++() {
            ++it_;
            settle();
            return *this;
        }
        const_iterator operator++(int) {
            auto before = *this;
            ++*this;
            return before;
        }
        bool operator==(const const_iterator& o) const {
            return shard_ == o.shard_ && (shard_ == shard_count || it_ == o.it_);
        }

    private:
        friend class ShardedTable;
        const_iterator(const ShardedTable* table, std::size_t shard) : table_(table), shard_(shard) {
            if (shard_ < shard_count) {
                if (const auto& m = table_->shards_[shard_]) it_ = m->begin();
                settle_from_shard();
            }
        }
        const_iterator(const ShardedTable* table, std::size_t shard, typename Map::const_iterator it)
            : table_(table), shard_(shard), it_(it) {}
        // Moves past the end of a shard to the first entry of the next non-empty one.
        void settle() {
            if (it_ == table_->shards_[shard_]->end()) {
                ++shard_;
                if (shard_ < shard_count) {
                    if (const auto& m = table_->shards_[shard_]) it_ = m->begin();
                }
                settle_from_shard();
            }
        }
        void settle_from_shard() {
            while (shard_ < shard_count &&
                   (!table_->shards_[shard_] || it_ == table_->shards_[shard_]->end())) {
                ++shard_;
                if (shard_ < shard_count && table_->shards_[shard_]) it_ = table_->shards_[shard_]->begin();
            }
        }

        const ShardedTable* table_ = nullptr;
        std::size_t shard_ = shard_count;
        typename Map::const_iterator it_{};
    };

    const_iterator begin() const { return const_iterator(this, 0); }
    const_iterator end() const { return const_iterator(this, shard_count); }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    const Value* find_ptr(std::string_view key) const {
        const auto& m = shards_[shard_of(key)];
        if (!m) return nullptr;
        const auto it = m->find(key);
        return it == m->end() ? nullptr : &it->second;
    }
    const_iterator find(std::string_view key) const {
        const auto s = shard_of(key);
        const auto& m = shards_[s];
        if (!m) return end();
        const auto it = m->find(key);
        return it == m->end() ? end() : const_iterator(this, s, it);
    }
    std::size_t count(std::string_view key) const { return find_ptr(key) ? 1 : 0; }
    const Value& at(std::string_view key) const {
        if (const auto* v = find_ptr(key)) return *v;
        throw std::out_of_range("no entry " + std::string(key));
    }

    // Changes: each copies the one shard it touches when another table
    // shares it.
    // Adds `value` unless `key` is taken; true when added. References, as
    // std::map's: `emplace(s.id, std::move(s))` must read the id first.
    template <class Key, class V>
    bool emplace(Key&& key, V&& value) {
        auto& m = writable(shard_of(key));
        const bool added = m.try_emplace(std::string(std::forward<Key>(key)), std::forward<V>(value)).second;
        size_ += added ? 1 : 0;
        return added;
    }
    template <class Key, class V>
    void insert_or_assign(Key&& key, V&& value) {
        auto& m = writable(shard_of(key));
        size_ += m.insert_or_assign(std::string(std::forward<Key>(key)), std::forward<V>(value)).second ? 1 : 0;
    }
    std::size_t erase(std::string_view key) {
        const auto s = shard_of(key);
        if (!shards_[s] || !shards_[s]->count(key)) return 0;
        auto& m = writable(s);
        m.erase(m.find(key));
        --size_;
        return 1;
    }
    Value& at(std::string_view key) {
        auto& m = writable(shard_of(key));
        const auto it = m.find(key);
        if (it == m.end()) throw std::out_of_range("no entry " + std::string(key));
        return it->second;
    }
    Value& operator[](const std::string& key) {
        auto& m = writable(shard_of(key));
        auto [it, added] = m.try_emplace(key);
        size_ += added ? 1 : 0;
        return it->second;
    }

    // True when shard `i` of both tables is one and the same (so are its
    // entries): what a comparison of two snapshots may skip.
    bool same_shard(const ShardedTable& other, std::size_t i) const { return shards_[i] == other.shards_[i]; }
    // The entries of shard `i` (null when it has none).
    const Map* shard(std::size_t i) const { return shards_[i].get(); }

private:
    static std::size_t shard_of(std::string_view key) { return std::hash<std::string_view>{}(key) % shard_count; }
    Map& writable(std::size_t s) {
        auto& m = shards_[s];
        if (!m)
            m = std::make_shared<Map>();
        else if (m.use_count() != 1)
            m = std::make_shared<Map>(*m);
        else
            // The last other owner's release happens before this write.
            std::atomic_thread_fence(std::memory_order_acquire);
        // Held as const by readers; only this table, its sole owner now, writes.
        return const_cast<Map&>(*m);
    }

    std::array<std::shared_ptr<const Map>, shard_count> shards_{};
    std::size_t size_ = 0;
};

}  // namespace vaultgate
