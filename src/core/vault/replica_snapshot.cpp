// A shared store with a local snapshot: what a replica starts from when its
// database cannot be reached. The snapshot is a file store (same format and
// key), written whole by a thread of its own from a copy taken at most once
// per interval, so a change through the admin API or from another replica
// costs no disk write.
#include "vaultgate/vault/store.hpp"

#include "vaultgate/observe/diag_log.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace vaultgate {

namespace {

using steady = std::chrono::steady_clock;
using wall = std::chrono::system_clock;

// Writes the newest copy handed to it; copies that come while it writes
// replace one another, so at most one waits. A confirmation (the database
// still holds what was written last) sets the file's time to now, so that
// its age counts from when it was last known to be current.
class SnapshotWriter {
public:
    SnapshotWriter(std::string path, const Secret& master_key, std::function<void()> on_done)
        : path_(std::move(path)),
          file_(open_file_store(path_, master_key)),
          on_done_(std::move(on_done)),
          thread_([this] { run(); }) {}

    ~SnapshotWriter() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();  // after writing what was handed over: a graceful stop keeps it
    }

    void write(StoreData data) {
        {
            std::lock_guard lock(mutex_);
            pending_ = std::move(data);
        }
        wake_.notify_one();
    }

    void confirm() {
        {
            std::lock_guard lock(mutex_);
            confirm_ = true;
        }
        wake_.notify_one();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stopping_ || pending_ || confirm_; });
            if (!pending_ && !confirm_) return;
            std::optional<StoreData> data;
            data.swap(pending_);
            const bool confirm = std::exchange(confirm_, false);
            lock.unlock();
            if (data) {
                save(*data);
                data.reset();
                // The copy and its encoding were allocated in this thread's
                // arena, whose pages would otherwise stay with the process.
                malloc_trim(0);
            } else if (confirm && !failing_) {
                touch();
            }
            if (on_done_) on_done_();
            lock.lock();
        }
    }

    void save(const StoreData& data) {
        try {
            file_->save(data);
            if (failing_) log_info("store: the local snapshot " + path_ + " is written again");
            failing_ = false;
        } catch (const StoreError& e) {
            report_failure(e.what());
        }
    }

    void touch() {
        if (::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0) != 0)
            report_failure(path_ + ": cannot set its time: " + std::strerror(errno));
    }

    // Once per failing spell: the interval would repeat it. A snapshot that
    // failed to be written is not confirmed until a write succeeds.
    void report_failure(const std::string& what) {
        if (!failing_)
            log_warn("store: the local snapshot is not written: " + what +
                     "; a start without the database would serve an older one");
        failing_ = true;
    }

    std::string path_;
    std::unique_ptr<VaultStore> file_;  // used by the thread only
    std::function<void()> on_done_;
    bool failing_ = false;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::optional<StoreData> pending_;
    bool confirm_ = false;
    bool stopping_ = false;
    std::thread thread_;  // last: it starts once the rest is in place
};

class SnapshottedStore final : public VaultStore {
public:
    SnapshottedStore(OpenSharedStore open_shared, const Secret& master_key, LocalSnapshotOptions options)
        : open_shared_(std::move(open_shared)),
          options_(std::move(options)),
          reader_(open_file_store(options_.path, master_key)),
          writer_(options_.path, master_key, options_.on_written) {}

    StoreData load() override {
        try {
            StoreData data = shared().load();
            note(data, /*changed=*/true);
            return data;
        } catch (const StoreUnavailable& e) {
            live_ = false;
            return load_snapshot(std::string("store.url: ") + e.what());
        }
    }

    bool refresh(StoreData& data, Refresh* read) override {
        auto& store = shared();
        if (from_snapshot_) {
            // What the replica served while away may be behind by any number
            // of changes, removals among them: the database is read whole.
            StoreData whole = guarded([&] { return store.load(); });
            data = std::move(whole);
            if (read) read->whole = true;
            from_snapshot_ = false;
            log_info("store: the database is back; the local snapshot is replaced by what it holds");
            note(data, /*changed=*/true);
            return true;
        }
        const bool changed = guarded([&] { return store.refresh(data, read); });
        note(data, changed);
        return changed;
    }

    std::uint64_t apply(const StoreChange& change, const StoreData& next) override {
        auto& store = shared();
        // A change made from the snapshot could undo one made while this
        // replica was away; the next refresh reads the database first.
        if (from_snapshot_) throw StoreUnavailable("database: reconnected, the store is being read again");
        const auto stored = guarded([&] { return store.apply(change, next); });
        note(next, /*changed=*/true);
        return stored;
    }

    void save(const StoreData& data) override { guarded([&] { shared().save(data); }); }

    bool available() const override { return live_.load(); }

    std::string describe() const override {
        return (shared_ ? shared_->describe() : std::string("shared store")) + " (local snapshot " + options_.path +
               ")";
    }

private:
    // Opened on first use, and again after a start without the database.
    VaultStore& shared() {
        if (!shared_) {
            try {
                shared_ = open_shared_();
            } catch (const StoreUnavailable&) {
                live_ = false;
                throw;
            }
        }
        return *shared_;
    }

    // Runs `body` on the shared store, then takes its availability.
    template <class F>
    std::invoke_result_t<F&> guarded(F&& body) {
        struct Update {
            SnapshottedStore& self;
            ~Update() { self.live_ = self.shared_->available() && !self.from_snapshot_; }
        } update{*this};
        return body();
    }

    // A copy for the writer when something changed and the interval has
    // passed since the last one; the periodic refresh brings the last change
    // of a quiet spell. When nothing changed since the last copy, the
    // database has just confirmed it (at most once per interval too).
    void note(const StoreData& data, bool changed) {
        live_ = shared_ && shared_->available() && !from_snapshot_;
        dirty_ = dirty_ || changed;
        const auto now = steady::now();
        if (last_copy_ && now - *last_copy_ < options_.interval) return;
        if (dirty_)
            writer_.write(data);
        else if (last_copy_)
            writer_.confirm();
        else
            return;
        last_copy_ = now;
        dirty_ = false;
    }

    StoreData load_snapshot(const std::string& why) {
        struct stat st {};
        if (::stat(options_.path.c_str(), &st) != 0) {
            if (errno != ENOENT)
                throw StoreError(why + "; the local snapshot " + options_.path + " cannot be read: " +
                                 std::strerror(errno));
            throw StoreError(why + "; a replica cannot start without its database unless it has a local snapshot, "
                                   "and " + options_.path + " does not exist yet");
        }
        const auto written = wall::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
        const auto age = std::chrono::duration_cast<std::chrono::seconds>(wall::now() - written);
        if (age > options_.max_age)
            throw StoreError(why + "; the local snapshot " + options_.path + " was written " +
                             std::to_string(age.count()) + " s ago, longer than store.snapshot_max_age (" +
                             std::to_string(options_.max_age.count() / 1000) +
                             " s): it could bring back revoked sessions and replaced credentials");
        StoreData data = reader_->load();
        from_snapshot_ = true;
        log_warn(why + "; serving the local snapshot " + options_.path + " written " + std::to_string(age.count()) +
                 " s ago until the database is back (admin writes answer 503 store_unavailable)");
        return data;
    }

    OpenSharedStore open_shared_;
    LocalSnapshotOptions options_;
    std::unique_ptr<VaultStore> shared_;
    std::unique_ptr<VaultStore> reader_;
    bool from_snapshot_ = false;
    bool dirty_ = false;
    std::optional<steady::time_point> last_copy_;
    std::atomic<bool> live_ = false;
    SnapshotWriter writer_;  // last: joined first, while the rest is still here
};

}  // namespace

std::unique_ptr<VaultStore> with_local_snapshot(OpenSharedStore open_shared, const Secret& master_key,
                                                LocalSnapshotOptions options) {
    if (options.path.empty()) throw StoreError("store.snapshot_path is empty");
    return std::make_unique<SnapshottedStore>(std::move(open_shared), master_key, std::move(options));
}

}  // namespace vaultgate
