// Rollback protection for any VaultStore: the generation record beside it.
#include "vaultgate/vault/store.hpp"

#include "atomic_file.hpp"
#include "vaultgate/util/unique_fd.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <string_view>
#include <utility>

namespace vaultgate {

namespace {

using Fd = UniqueFd;

// The generation record: the highest store generation vaultgate has seen, as
// decimal digits and a newline. Deliberately without a MAC: whoever can write
// beside the store can also delete this file, so it cannot stop that writer;
// it catches an older copy of the store file put back on its own (a backup or
// snapshot restore), which would bring back revoked sessions and replaced
// credentials.
class RollbackGuard final : public VaultStore {
public:
    RollbackGuard(std::unique_ptr<VaultStore> inner, std::string record_path, bool allow_rollback)
        : inner_(std::move(inner)), record_path_(std::move(record_path)), allow_rollback_(allow_rollback) {}

    StoreData load() override {
        StoreData data = inner_->load();
        const auto seen = read_record();
        if (seen && *seen > data.generation && !allow_rollback_)
            throw StoreError(inner_->describe() + ": the store is at generation " + std::to_string(data.generation) +
                             ", older than generation " + std::to_string(*seen) + " last seen (" + record_path_ +
                             "): an older copy of the store was put back, which would bring back revoked sessions "
                             "and replaced credentials; to start from it anyway, run serve once with --allow-rollback");
        // Also after a crash between the store's rename and the record's.
        if (!seen || *seen != data.generation) write_record(data.generation);
        last_ = data.generation;
        return data;
    }

    void save(const StoreData& data) override {
        // Two different states under one generation would let the older one
        // pass the check.
        if (data.generation <= last_)
            throw StoreError(inner_->describe() + ": not saved: generation " + std::to_string(data.generation) +
                             " is not above " + std::to_string(last_) + ", the last one loaded or saved");
        // The store first: a crash in between leaves the record behind the
        // store, which the next load accepts, never ahead of it.
        inner_->save(data);
        write_record(data.generation);
        last_ = data.generation;
    }

    // As save(), with the inner store's own per-change write.
    std::uint64_t apply(const StoreChange& change, const StoreData& next) override {
        if (next.generation <= last_)
            throw StoreError(inner_->describe() + ": not saved: generation " + std::to_string(next.generation) +
                             " is not above " + std::to_string(last_) + ", the last one loaded or saved");
        const std::uint64_t stored = inner_->apply(change, next);
        write_record_in_place(stored);
        last_ = stored;
        return stored;
    }

    std::string describe() const override { return inner_->describe(); }

private:
    // nullopt when there is no record yet. A record that is not one (garbage,
    // a FIFO, a directory) is an error unless it is about to be overwritten.
    std::optional<std::uint64_t> read_record() const {
        // O_NONBLOCK: a FIFO planted here must not hang the start.
        Fd fd(::open(record_path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
        if (fd.get() < 0) {
            if (errno == ENOENT) return std::nullopt;
            return unreadable_record("cannot open: " + errno_text());
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) return unreadable_record("cannot stat: " + errno_text());
        if (!S_ISREG(st.st_mode)) return unreadable_record("not a regular file");
        WipedBytes bytes;
        bool more = false;
        if (!read_up_to(fd.get(), bytes, 32, more)) return unreadable_record("cannot read: " + errno_text());
        auto text = bytes.view();
        if (text.ends_with('\n')) text.remove_suffix(1);
        if (more || text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string_view::npos)
            return unreadable_record("expected a generation number");
        std::uint64_t value = 0;
        for (char c : text) {
            const auto digit = static_cast<std::uint64_t>(c - '0');
            if (value > (UINT64_MAX - digit) / 10) return unreadable_record("expected a generation number");
            value = value * 10 + digit;
        }
        return value;
    }

    std::optional<std::uint64_t> unreadable_record(const std::string& what) const {
        // --allow-rollback replaces whatever is there with the store's generation.
        if (allow_rollback_) return std::nullopt;
        throw StoreError(record_path_ + ": " + what +
                         " (the store generation last seen; remove it or run serve "
                         "once with --allow-rollback)");
    }

    void write_record(std::uint64_t generation) {
        record_fd_ = Fd();  // the file it was open on is replaced
        const std::string text = std::to_string(generation) + "\n";
        remove_stale_temps(record_path_);
        replace_file(record_path_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    }

    // Per change: fixed width (20 digits, which the reader takes too), so that
    // after the first write each one overwrites the same 21 bytes in place
    // (within one disk sector) with one fdatasync, instead of a new file, a
    // rename and two fsyncs.
    void write_record_in_place(std::uint64_t generation) {
        char text[record_width + 1];
        std::snprintf(text, sizeof text, "%020llu\n", static_cast<unsigned long long>(generation));
        const auto* bytes = reinterpret_cast<const unsigned char*>(text);
        if (record_fd_.get() >= 0) {
            if (::pwrite(record_fd_.get(), bytes, record_width, 0) == static_cast<ssize_t>(record_width) &&
                ::fdatasync(record_fd_.get()) == 0)
                return;
            record_fd_ = Fd();  // written anew below
        }
        remove_stale_temps(record_path_);
        replace_file(record_path_, bytes, record_width);
        record_fd_ = Fd(::open(record_path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    }

    static constexpr std::size_t record_width = 21;

    std::unique_ptr<VaultStore> inner_;
    std::string record_path_;
    Fd record_fd_;  // the record written by this guard, overwritten in place
    bool allow_rollback_;
    std::uint64_t last_ = 0;
};

}  // namespace

std::string generation_record_path(const std::string& store_path) { return store_path + ".generation"; }

std::unique_ptr<VaultStore> guard_against_rollback(std::unique_ptr<VaultStore> store, const std::string& record_path,
                                                   bool allow_rollback) {
    return std::make_unique<RollbackGuard>(std::move(store), record_path, allow_rollback);
}

}  // namespace vaultgate
