#include "pg_connection.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace vaultgate::pg {

namespace {

std::string trimmed(const char* text) {
    std::string s = text ? text : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string sqlstate_of(const PGresult* r) {
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    return state ? state : "";
}

}  // namespace

std::string Result::text(int row, int col) const { return PQgetvalue(r_.get(), row, col); }

long long Result::number(int row, int col) const {
    const char* v = PQgetvalue(r_.get(), row, col);
    long long out = 0;
    const auto end = v + std::strlen(v);
    auto [p, ec] = std::from_chars(v, end, out);
    if (ec != std::errc() || p != end) throw StoreError("database: an integer column holds something else");
    return out;
}

long long Result::affected() const {
    const char* n = PQcmdTuples(r_.get());
    return n && *n ? std::atoll(n) : 0;
}

// What libpq itself reads from the URL decides, not its text: a password in
// any spelling (user info, `password=`, percent-encoded keywords) is refused,
// and a URL libpq cannot read is refused without libpq's message, which
// quotes the part it could not decode.
void require_usable_url(const std::string& url) {
    char* error = nullptr;
    PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
    if (options == nullptr) {
        PQfreemem(error);
        throw StoreError("database: store.url is not a URL libpq can read");
    }
    std::optional<std::string> problem;
    for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
        if (o->val == nullptr) continue;
        if (std::strcmp(o->keyword, "password") == 0)
            problem = "store.url holds a password; give it through PGPASSFILE (or another libpq source) instead";
        else if (std::strcmp(o->keyword, "connect_timeout") == 0 && std::atoi(o->val) <= 0)
            problem = "store.url: connect_timeout must be at least 1 second";
    }
    PQconninfoFree(options);
    if (problem) throw StoreError("database: " + *problem);
}

std::unique_ptr<PGconn, ConnFinish> connect(const std::string& url) {
    require_usable_url(url);
    // Later keywords override earlier ones, so the URL may set its own values.
    // Without them, no connect, statement or lock wait is endless, and a
    // connection that died silently is found by TCP within half a minute.
    const char* keys[] = {"connect_timeout", "keepalives_idle", "tcp_user_timeout", "options",
                          "application_name", "dbname", nullptr};
    const char* values[] = {"5", "15", "30000", "-c statement_timeout=30000 -c lock_timeout=30000",
                            "vaultgate", url.c_str(), nullptr};
    std::unique_ptr<PGconn, ConnFinish> conn(PQconnectdbParams(keys, values, 1));
    if (!conn) throw StoreUnavailable("database: out of memory while connecting");
    if (PQstatus(conn.get()) != CONNECTION_OK)
        throw StoreUnavailable("database: cannot connect: " + trimmed(PQerrorMessage(conn.get())));
    // The server's notices ("already exists, skipping") would go to stderr
    // as they are; nothing in them calls for the operator.
    PQsetNoticeProcessor(
        conn.get(), [](void*, const char*) {}, nullptr);
    return conn;
}

void Connection::ensure() {
    if (connected()) return;
    conn_.reset();
    // A database that is down is tried again after a pause that doubles up
    // to 5 s, so that a burst of admin writes does not each wait for it.
    const auto now = std::chrono::steady_clock::now();
    if (now < next_attempt_) throw StoreUnavailable(last_failure_);
    try {
        conn_ = connect(url_);
        backoff_ = std::chrono::milliseconds(0);
    } catch (const StoreUnavailable& e) {
        backoff_ = std::min(std::max(backoff_ * 2, std::chrono::milliseconds(100)), std::chrono::milliseconds(5000));
        next_attempt_ = now + backoff_;
        last_failure_ = e.what();
        throw;
    }
}

bool Connection::connected() const { return conn_ && PQstatus(conn_.get()) == CONNECTION_OK; }

Result Connection::exec(const std::string& what, const char* sql, const Params& params) {
    ensure();
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return checked(Result(PQexecParams(conn_.get(), sql, static_cast<int>(values.size()), nullptr, values.data(),
                                       nullptr, nullptr, 0)),
                   what);
}

Result Connection::exec_script(const std::string& what, const char* sql) {
    ensure();
    return checked(Result(PQexec(conn_.get(), sql)), what);
}

Result Connection::checked(Result result, const std::string& what) {
    const auto status = PQresultStatus(result.get());
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    const std::string message =
        "database: " + what + ": " + trimmed(PQresultErrorField(result.get(), PG_DIAG_MESSAGE_PRIMARY));
    if (!connected()) {
        conn_.reset();
        throw StoreUnavailable("database: " + what + ": the connection was lost");
    }
    const std::string state = sqlstate_of(result.get());
    // 23505 unique_violation, 23503 foreign_key_violation: another writer was first.
    if (state == "23505" || state == "23503") throw StoreConflict("conflict", message);
    // Class 08 (connection exception), 57P (operator intervention: shutdown).
    if (state.starts_with("08") || state.starts_with("57P")) {
        conn_.reset();
        throw StoreUnavailable(message);
    }
    throw StoreError(message);
}

void Connection::rollback() {
    if (!connected()) return;
    PQclear(PQexec(conn_.get(), "ROLLBACK"));
}

}  // namespace vaultgate::pg
