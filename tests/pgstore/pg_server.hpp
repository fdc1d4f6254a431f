#pragma once
// A real PostgreSQL 15 for one test process: initdb in a temp directory (as
// `nobody` when the tests run as root, since postgres refuses root), a port
// picked at run time, listening on 127.0.0.1 only, password authentication
// (scram-sha-256) with the password handed to libpq through PGPASSFILE, which
// the constructor sets for this process and its children. Stopped and removed
// at destruction.
#include <memory>
#include <string>

namespace vaultgate::test {

class PgServer {
public:
    // Throws std::runtime_error naming the step that failed (and its log).
    PgServer();
    ~PgServer();
    PgServer(const PgServer&) = delete;
    PgServer& operator=(const PgServer&) = delete;

    // postgresql://vaultgate@127.0.0.1:<port>/postgres
    std::string url() const;
    // The same server stopped (fast shutdown: connections are cut) and started
    // again on the same port, for outage tests.
    void stop();
    void start();
    // Runs one SQL statement through psql as the test user; its output.
    std::string psql(const std::string& sql) const;

private:
    std::string dir_, data_, log_;
    int port_ = 0;
    bool running_ = false;
};

// Starts a PostgreSQL for the test, or fails it: scripts/install-deps.sh
// installs PostgreSQL wherever the tests run, as root (postgres then runs as
// `nobody`) or not, so a server that cannot start is a broken setup.
#define VAULTGATE_START_PG(var)                                        \
    std::unique_ptr<::vaultgate::test::PgServer> var;                  \
    try {                                                              \
        var = std::make_unique<::vaultgate::test::PgServer>();         \
    } catch (const std::exception& e) {                                \
        FAIL() << "PostgreSQL could not start: " << e.what();          \
    }

}  // namespace vaultgate::test
