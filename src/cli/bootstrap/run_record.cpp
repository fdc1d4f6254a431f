#include "cli/bootstrap/run_record.hpp"

#include "cli/bootstrap/files.hpp"
#include "cli/commands.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vaultgate::cli::bootstrap {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string home_dir() {
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return home;
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
    return {};
}

std::vector<std::string> strings_of(const json& j, const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key)) return out;
    if (!j[key].is_array()) throw std::runtime_error(std::string("\"") + key + "\" is not a list");
    for (const auto& item : j[key]) {
        if (!item.is_string()) throw std::runtime_error(std::string("\"") + key + "\" holds a non-string");
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::string string_of(const json& j, const char* key) {
    if (!j.contains(key) || !j[key].is_string()) throw std::runtime_error(std::string("no \"") + key + "\"");
    return j[key].get<std::string>();
}

}  // namespace

fs::path record_dir() {
    if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/')
        return fs::path(state) / "vaultgate" / "bootstrap";
    const std::string home = home_dir();
    if (home.empty()) return {};
    return fs::path(home) / ".local" / "state" / "vaultgate" / "bootstrap";
}

void prepare_record_dir() {
    const fs::path dir = record_dir();
    if (dir.empty())
        throw UsageError("no directory for the cleanup record: set HOME or XDG_STATE_HOME (an absolute path)");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw UsageError("cannot make " + dir.string() + " for the cleanup record: " + ec.message());
    ::chmod(dir.c_str(), 0700);
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw UsageError("cannot write the cleanup record to " + dir.string() + ": " + std::strerror(errno));
}

fs::path record_path(const std::string& session_id) { return record_dir() / (session_id + ".json"); }

void save_record(const RunRecord& r) {
    json j = {{"session", r.session_id},
              {"vault", {{"id", r.vault_id}, {"name", r.vault_name}, {"created", r.vault_created}}},
              {"credentials_created", r.credentials_created},
              {"credentials_rotated", r.credentials_rotated},
              {"services_created", r.services_created}};
    write_file(record_path(r.session_id), j.dump(2) + "\n", 0600);
}

std::optional<RunRecord> load_record(const std::string& session_id) {
    const fs::path path = record_path(session_id);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;
        throw std::runtime_error("cannot read the cleanup record " + path.string() + ": " + std::strerror(errno));
    }
    struct stat st {};
    const bool safe = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                      (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
    ::close(fd);
    if (!safe)
        throw std::runtime_error("the cleanup record " + path.string() +
                                 " is not a regular file of this user writable by this user only; nothing was removed");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const json j = json::parse(text.str(), nullptr, false);
    try {
        if (!j.is_object()) throw std::runtime_error("not a JSON object");
        RunRecord r;
        r.session_id = string_of(j, "session");
        if (r.session_id != session_id) throw std::runtime_error("it is for another session");
        if (!j.contains("vault") || !j["vault"].is_object()) throw std::runtime_error("no \"vault\"");
        const json& vault = j["vault"];
        r.vault_id = string_of(vault, "id");
        r.vault_name = string_of(vault, "name");
        if (!vault.contains("created") || !vault["created"].is_boolean()) throw std::runtime_error("no \"created\"");
        r.vault_created = vault["created"].get<bool>();
        r.credentials_created = strings_of(j, "credentials_created");
        r.credentials_rotated = strings_of(j, "credentials_rotated");
        r.services_created = strings_of(j, "services_created");
        return r;
    } catch (const std::runtime_error& e) {
        throw std::runtime_error("the cleanup record " + path.string() + " is not valid (" + e.what() +
                                 "); nothing was removed");
    }
}

void remove_record(const std::string& session_id) {
    std::error_code ec;
    fs::remove(record_path(session_id), ec);
}

}  // namespace vaultgate::cli::bootstrap
