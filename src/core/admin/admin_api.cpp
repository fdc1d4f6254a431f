// The admin API: one lock around the catalog, two route tables, and the one
// place where a refusal becomes an error response.
#include "vaultgate/admin/admin_api.hpp"

#include "vaultgate/admin/api_error.hpp"
#include "vaultgate/admin/router.hpp"
#include "vaultgate/observe/diag_log.hpp"

#include <mutex>

namespace vaultgate {

namespace {

using namespace admin;

// The network layer's callback runs outside the lock; a failure in it must
// not turn a completed change into an error answer.
void notify_closed(const std::function<void(const std::string&)>& callback, const std::vector<std::string>& ids) {
    if (!callback) return;
    for (const auto& id : ids) {
        try {
            callback(id);
        } catch (...) {
            log_error("admin API: closing the connections of session " + id + " failed");
        }
    }
}

}  // namespace

class AdminApi::Impl {
public:
    Impl(Config config, std::unique_ptr<VaultStore> store, Secret master_key, AdminOptions options,
         std::function<void(std::shared_ptr<const GatewayState>)> publish, AccessLog* log, Metrics* metrics,
         std::function<MetricsExtras()> metrics_extras)
        : catalog_(std::move(config), std::move(store), std::move(master_key), std::move(publish)),
          options_(std::move(options)) {
        context_ = EndpointContext{&catalog_, &options_, log, metrics, std::move(metrics_extras)};
        add_open_routes(open_routes_, &context_);
        add_vault_routes(store_routes_, &context_);
        add_session_routes(store_routes_, &context_);
        add_log_routes(store_routes_, &context_);
    }

    void set_proxy_url(std::string url) {
        std::lock_guard lock(mutex_);
        options_.proxy_url = std::move(url);
    }

    void load() {
        // Startup, once: holding the lock while reading is harmless here and
        // keeps a racing reload from swapping the config underneath.
        std::lock_guard lock(mutex_);
        catalog_.load();
    }

    void reload(Config config) {
        // Credential files are read before taking the lock: a slow disk must
        // not hold up the API.
        auto config_state = Catalog::build_config_state(config);
        std::lock_guard lock(mutex_);
        catalog_.reload(std::move(config), std::move(config_state));
    }

    std::vector<std::string> expire(std::chrono::system_clock::time_point now) {
        std::lock_guard lock(mutex_);
        auto ids = catalog_.expire(now);
        for (auto& id : catalog_.take_gone_sessions()) ids.push_back(std::move(id));
        return ids;
    }

    std::vector<std::string> refresh() {
        std::lock_guard lock(mutex_);
        catalog_.refresh();
        return catalog_.take_gone_sessions();
    }

    AdminResponse handle(const AdminRequest& req, std::vector<std::string>& closed) {
        try {
            return dispatch(req, closed);
        } catch (const ApiError& e) {
            AdminResponse r = error_response(e.status, e.code, e.message);
            if (!e.allow.empty()) r.headers.emplace_back("Allow", e.allow);
            return r;
        } catch (...) {
            // The exception's text may hold anything; the operator gets the
            // fact, the client a bare 500.
            log_error("admin API: internal error while handling " + req.method + " request");
            return error_response(500, "internal_error", "internal error");
        }
    }

private:
    AdminResponse dispatch(const AdminRequest& req, std::vector<std::string>& closed) {
        if (req.body.size() > options_.max_body)
            fail(413, "body_too_large", "the body is larger than " + std::to_string(options_.max_body) + " bytes");
        const auto segments = split_path(req.path);
        if (!segments) fail(404, "not_found", "no such endpoint");
        // /healthz and /metrics answer before the store is loaded, and without the lock.
        if (segments->front() != "v1") return open_routes_.route(req, *segments, closed);
        if (segments->size() < 2) fail(404, "not_found", "no such endpoint");

        std::lock_guard lock(mutex_);
        // Before the store is loaded, a write would replace it with empty data.
        if (!catalog_.loaded()) fail(503, "not_ready", "the store is not loaded yet");
        // Sessions another replica deleted, found while this request re-read the store.
        struct TakeGone {
            Catalog& catalog;
            std::vector<std::string>& closed;
            ~TakeGone() {
                for (auto& id : catalog.take_gone_sessions()) closed.push_back(std::move(id));
            }
        } take_gone{catalog_, closed};
        return store_routes_.route(req, *segments, closed);
    }

    std::mutex mutex_;
    Catalog catalog_;
    AdminOptions options_;
    EndpointContext context_;
    Router open_routes_;   // need neither the lock nor the store
    Router store_routes_;  // /v1/...: under the lock, once the store is loaded
};

AdminApi::AdminApi(Config config, std::unique_ptr<VaultStore> store, Secret master_key, AdminOptions options,
                   std::function<void(std::shared_ptr<const GatewayState>)> publish, AccessLog* log, Metrics* metrics,
                   std::function<MetricsExtras()> metrics_extras)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(store), std::move(master_key), std::move(options),
                                   std::move(publish), log, metrics, std::move(metrics_extras))) {}

AdminApi::~AdminApi() = default;

void AdminApi::load() { impl_->load(); }

AdminResponse AdminApi::handle(const AdminRequest& req) {
    std::vector<std::string> closed;
    AdminResponse response = impl_->handle(req, closed);
    notify_closed(on_session_closed, closed);
    return response;
}

std::vector<std::string> AdminApi::expire_sessions(std::chrono::system_clock::time_point now) {
    auto expired = impl_->expire(now);
    notify_closed(on_session_closed, expired);
    return expired;
}

std::vector<std::string> AdminApi::refresh() {
    auto gone = impl_->refresh();
    notify_closed(on_session_closed, gone);
    return gone;
}

void AdminApi::reload_config(Config config) { impl_->reload(std::move(config)); }

void AdminApi::set_proxy_url(std::string url) { impl_->set_proxy_url(std::move(url)); }

}  // namespace vaultgate
