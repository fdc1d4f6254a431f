// `vaultgate bootstrap --cleanup SESSION`: the session always goes; the rest
// only as far as the run's record says the run made it and nothing else uses
// it. What is kept is named on stderr and stays in the record, so running the
// cleanup again later finishes the job.
#include "cli/bootstrap/run.hpp"
#include "cli/bootstrap/run_record.hpp"
#include "cli/bootstrap/vault_steps.hpp"
#include "vaultgate/credentials/validation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace vaultgate::cli::bootstrap {

namespace {

using nlohmann::json;

// What the server says about deleting one thing.
enum class Deleted { now, already_gone, in_use };

Deleted delete_one(const AdminClient& client, const std::string& target, const char* in_use_code) {
    auto response = client.request("DELETE", target);
    if (response.status == 204 || response.status == 200) return Deleted::now;
    try {
        expect_status(response, {204}, client);
    } catch (const ApiError& e) {
        if (response.status == 404 && e.code != "not_found") return Deleted::already_gone;
        if (e.code == in_use_code) {
            std::fprintf(stderr, "vaultgate bootstrap: kept: %s\n", e.what());
            return Deleted::in_use;
        }
        throw;
    }
    return Deleted::now;
}

std::vector<std::string> vault_ids_of(const json& session) {
    std::vector<std::string> ids;
    for (const auto& v : items_of(session, "vaults")) {
        if (v.is_string()) ids.push_back(v.get<std::string>());
        if (v.is_object() && v.contains("id") && v["id"].is_string()) ids.push_back(v["id"].get<std::string>());
    }
    return ids;
}

bool names_vault(const json& session, const std::string& vault_id) {
    const auto ids = vault_ids_of(session);
    return std::find(ids.begin(), ids.end(), vault_id) != ids.end();
}

// A record that names a vault its session does not use was not written by
// that session's run; nothing is removed on its word.
void check_record_matches_session(const AdminClient& client, const RunRecord& record) {
    auto response = client.request("GET", admin_target({"v1", "sessions", record.session_id}));
    if (response.status != 200) return;  // gone, or a server without this endpoint
    if (!names_vault(parse_body(response, client), record.vault_id))
        throw std::runtime_error("session " + record.session_id + " does not use vault " + record.vault_id +
                                 ", which its cleanup record names; nothing was removed");
}

// The other sessions that use the vault; nullopt when the server cannot list them.
std::optional<std::vector<std::string>> sessions_using(const AdminClient& client, const std::string& vault_id) {
    auto response = client.request("GET", "/v1/sessions");
    if (response.status != 200) return std::nullopt;
    std::vector<std::string> users;
    for (const auto& s : items_of(parse_body(response, client), "sessions"))
        if (names_vault(s, vault_id) && s.contains("id") && s["id"].is_string())
            users.push_back(s["id"].get<std::string>());
    return users;
}

// What the run added to a vault it found: removed only when no session uses
// the vault any more, services before the credentials they inject.
bool remove_additions(const AdminClient& client, const RunRecord& record) {
    if (record.services_created.empty() && record.credentials_created.empty()) return true;
    const auto users = sessions_using(client, record.vault_id);
    if (!users || !users->empty()) {
        std::fprintf(
            stderr, "vaultgate bootstrap: kept what this run added to vault %s (%s): %s\n", record.vault_name.c_str(),
            record.vault_id.c_str(),
            users ? ("session " + users->front() + " uses the vault").c_str() : "the admin API cannot list sessions");
        return false;
    }
    bool all = true;
    for (const auto& id : record.services_created)
        if (delete_one(client, admin_target({"v1", "vaults", record.vault_id, "services", id}), "") == Deleted::now)
            std::fprintf(stderr, "vaultgate bootstrap: deleted service %s of vault %s\n", id.c_str(),
                         record.vault_id.c_str());
    for (const auto& name : record.credentials_created) {
        const auto result = delete_one(client, admin_target({"v1", "vaults", record.vault_id, "credentials", name}),
                                       "credential_in_use");
        if (result == Deleted::now)
            std::fprintf(stderr, "vaultgate bootstrap: deleted credential %s of vault %s\n", name.c_str(),
                         record.vault_id.c_str());
        all = all && result != Deleted::in_use;
    }
    return all;
}

int cleanup(const AdminClient& client, const std::string& session_id, const std::optional<RunRecord>& record) {
    if (record) check_record_matches_session(client, *record);
    const auto session = delete_one(client, admin_target({"v1", "sessions", session_id}), "");
    if (session == Deleted::already_gone && !record)
        throw std::runtime_error("unknown session " + session_id + ": the admin API has no such session and " +
                                 record_dir().string() + " holds no cleanup record for it");
    std::fprintf(stderr, "vaultgate bootstrap: %s session %s\n",
                 session == Deleted::now ? "deleted" : "already gone:", session_id.c_str());
    if (!record) {
        std::fprintf(stderr, "vaultgate bootstrap: no cleanup record for %s in %s; only the session was deleted\n",
                     session_id.c_str(), record_dir().string().c_str());
        return 0;
    }
    bool done = true;
    if (record->vault_created) {
        const auto vault = delete_one(client, admin_target({"v1", "vaults", record->vault_id}), "vault_in_use");
        if (vault == Deleted::now)
            std::fprintf(stderr, "vaultgate bootstrap: deleted vault %s (%s)\n", record->vault_name.c_str(),
                         record->vault_id.c_str());
        done = vault != Deleted::in_use;
    } else {
        done = remove_additions(client, *record);
    }
    if (done)
        remove_record(session_id);
    else
        std::fprintf(stderr, "vaultgate bootstrap: the record stays at %s; run the cleanup again to finish\n",
                     record_path(session_id).string().c_str());
    return 0;
}

}  // namespace

int run_cleanup(const std::string& session_id, const OpenAdmin& open_admin) {
    // Also keeps the record's file name inside the record directory.
    if (!validation::is_valid_name(session_id)) throw UsageError("--cleanup: not a session id");
    const std::optional<RunRecord> record = load_record(session_id);
    AdminClient client = open_admin();
    return report_api_errors([&] { return cleanup(client, session_id, record); });
}

}  // namespace vaultgate::cli::bootstrap
