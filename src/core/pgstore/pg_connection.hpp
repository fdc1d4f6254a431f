#pragma once
// A libpq connection with the few calls the store makes: text parameters in,
// text results out, and errors sorted into what the admin API answers
// (StoreUnavailable for a database out of reach, StoreConflict for a unique or
// foreign key violation, StoreError for the rest). Messages name the
// statement's purpose and libpq's text, never a parameter.
#include "vaultgate/state/store.hpp"

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace vaultgate::pg {

struct ResultFree {
    void operator()(PGresult* r) const { PQclear(r); }
};
struct ConnFinish {
    void operator()(PGconn* c) const { PQfinish(c); }
};

class Result {
public:
    explicit Result(PGresult* r) : r_(r) {}
    PGresult* get() const { return r_.get(); }
    int rows() const { return PQntuples(r_.get()); }
    bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
    std::string text(int row, int col) const;
    long long number(int row, int col) const;  // throws StoreError when not an integer
    long long affected() const;                // rows an INSERT, UPDATE or DELETE touched

private:
    std::unique_ptr<PGresult, ResultFree> r_;
};

using Params = std::vector<std::optional<std::string>>;  // nullopt: SQL NULL

// Opens a connection to `url` (a libpq URI or key=value string). Throws
// StoreUnavailable with libpq's reason (which names no password).
std::unique_ptr<PGconn, ConnFinish> connect(const std::string& url);

class Connection {
public:
    explicit Connection(std::string url) : url_(std::move(url)) {}

    // Connects when not connected (or the connection broke). Throws StoreUnavailable.
    void ensure();
    bool connected() const;
    void drop() { conn_.reset(); }

    // Runs one statement. `what` names it in errors ("reading the vaults").
    Result exec(const std::string& what, const char* sql, const Params& params = {});
    // Several statements without parameters (a migration).
    Result exec_script(const std::string& what, const char* sql);
    // BEGIN ... COMMIT around `body`; ROLLBACK when it throws.
    template <class F>
    auto transaction(const char* begin_sql, F&& body) {
        exec("starting a transaction", begin_sql);
        try {
            if constexpr (std::is_void_v<decltype(body())>) {
                body();
                exec("committing", "COMMIT");
            } else {
                auto out = body();
                exec("committing", "COMMIT");
                return out;
            }
        } catch (...) {
            rollback();
            throw;
        }
    }
    void rollback();

private:
    Result checked(Result result, const std::string& what);

    std::string url_;
    std::unique_ptr<PGconn, ConnFinish> conn_;
    std::chrono::milliseconds backoff_{0};
    std::chrono::steady_clock::time_point next_attempt_{};
    std::string last_failure_;
};

}  // namespace vaultgate::pg
