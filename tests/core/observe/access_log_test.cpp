#include "vaultgate/observe/access_log.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <thread>

namespace vaultgate {
namespace {

using namespace std::chrono;
using test::TempDir;

// 2026-11-29T19:00:00.123Z
system_clock::time_point spec_instant() { return system_clock::time_point(seconds(1795978800)) + milliseconds(123); }

AccessLogEntry spec_entry() {
    AccessLogEntry e;
    e.ts = spec_instant();
    e.session = "default";
    e.vault = "composio";
    e.service = "backend.composio.dev";
    e.ingress = "mitm";
    e.method = "POST";
    e.host = "backend.composio.dev";
    e.port = 443;
    e.set_path("/api/v3/tool_router/session/x/execute?api_key=sk-secret");
    e.status = 200;
    e.bytes_up = 312;
    e.bytes_down = 2048;
    e.ms = 41.68;
    return e;
}

std::vector<std::string> keys_of(const std::string& line) {
    // Kept in a named object: iterating items() of a temporary would dangle.
    const auto j = nlohmann::ordered_json::parse(line);
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    return keys;
}

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(AccessLogTest, MatchesTheSpecExampleExactly) {
    EXPECT_EQ(to_json_line(spec_entry()),
              R"({"ts":"2026-11-29T19:00:00.123Z","session":"default","vault":"composio",)"
              R"("service":"backend.composio.dev","ingress":"mitm","method":"POST",)"
              R"("host":"backend.composio.dev","port":443,"path":"/api/v3/tool_router/session/x/execute",)"
              R"("status":200,"bytes_up":312,"bytes_down":2048,"ms":41.7})");
}

TEST(AccessLogTest, KeyOrderWithEveryOptionalField) {
    auto e = spec_entry();
    e.reason = "upstream_timeout";
    e.client = "10.0.0.7";
    EXPECT_EQ(keys_of(to_json_line(e)),
              (std::vector<std::string>{"ts", "session", "vault", "service", "ingress", "method", "host", "port",
                                        "path", "status", "bytes_up", "bytes_down", "ms", "reason", "client"}));
}

TEST(AccessLogTest, ProtoComesLast) {
    auto e = spec_entry();
    e.client = "10.0.0.7";
    e.proto = "h2";
    const auto keys = keys_of(to_json_line(e));
    ASSERT_FALSE(keys.empty());
    EXPECT_EQ(keys.back(), "proto");
    EXPECT_EQ(nlohmann::json::parse(to_json_line(e))["proto"], "h2");
    EXPECT_EQ(to_json_line(spec_entry()).find("proto"), std::string::npos);  // omitted when empty
}

TEST(AccessLogTest, EmptyOptionalFieldsAreOmitted) {
    AccessLogEntry e;
    e.ts = spec_instant();
    e.session = "s1";
    e.ingress = "denied";
    e.host = "169.254.169.254";
    e.port = 80;
    e.status = 403;
    e.reason = "private_address";
    auto j = nlohmann::json::parse(to_json_line(e));
    EXPECT_FALSE(j.contains("vault"));
    EXPECT_FALSE(j.contains("service"));
    EXPECT_FALSE(j.contains("client"));
    EXPECT_EQ(j["reason"], "private_address");
    EXPECT_EQ(j["method"], "CONNECT");  // tunnels and CONNECT denials carry no method
    EXPECT_EQ(j["port"], 80);
}

TEST(AccessLogTest, TimestampIsUtcWithMilliseconds) {
    AccessLogEntry e;
    e.ts = system_clock::time_point(seconds(0)) + milliseconds(5);
    EXPECT_EQ(nlohmann::json::parse(to_json_line(e))["ts"], "1970-01-01T00:00:00.005Z");
    e.ts = system_clock::time_point(seconds(1795978800)) + microseconds(999999);
    EXPECT_EQ(nlohmann::json::parse(to_json_line(e))["ts"], "2026-11-29T19:00:00.999Z");
}

TEST(AccessLogTest, MillisecondsAreRoundedToATenth) {
    AccessLogEntry e;
    e.ms = 0.04;
    EXPECT_NE(to_json_line(e).find(R"("ms":0.0)"), std::string::npos);
    e.ms = 12.25001;
    EXPECT_NE(to_json_line(e).find(R"("ms":12.3)"), std::string::npos);
    e.ms = 1234.0;
    EXPECT_EQ(nlohmann::json::parse(to_json_line(e))["ms"].get<double>(), 1234.0);
}

TEST(AccessLogTest, TimestampsWithinOneSecondAndAcrossSecondsAreEachRight) {
    AccessLogEntry e;
    // The date part is reused within a second; make sure a new second (and an
    // older one again) is formatted afresh.
    for (auto [ms, text] :
         std::vector<std::pair<long long, std::string>>{{1795978800123, "2026-11-29T19:00:00.123Z"},
                                                        {1795978800999, "2026-11-29T19:00:00.999Z"},
                                                        {1795978801000, "2026-11-29T19:00:01.000Z"},
                                                        {1795978800007, "2026-11-29T19:00:00.007Z"}}) {
        e.ts = system_clock::time_point(milliseconds(ms));
        EXPECT_EQ(nlohmann::json::parse(to_json_line(e))["ts"], text);
    }
}

TEST(AccessLogTest, AbsurdDurationStillGivesValidJson) {
    AccessLogEntry e;
    e.ms = 1e300;
    EXPECT_TRUE(nlohmann::json::accept(to_json_line(e)));
    e.ms = std::numeric_limits<double>::quiet_NaN();
    EXPECT_TRUE(nlohmann::json::accept(to_json_line(e)));
}

TEST(AccessLogTest, SetPathKeepsOnlyThePath) {
    AccessLogEntry e;
    e.set_path("/a/b?token=secret");
    EXPECT_EQ(e.path, "/a/b");
    e.set_path("/a/b#frag?x");
    EXPECT_EQ(e.path, "/a/b");
    e.set_path("/plain");
    EXPECT_EQ(e.path, "/plain");
    e.set_path("?only=query");
    EXPECT_EQ(e.path, "");
    e.set_path("http://user:pw@example.com/p/q?k=v");
    EXPECT_EQ(e.path, "/p/q");
    e.set_path("http://example.com?k=v");
    EXPECT_EQ(e.path, "/");
    e.set_path("/redirect?to=http://x/y");
    EXPECT_EQ(e.path, "/redirect");
    e.set_path("example.com:443");
    EXPECT_EQ(e.path, "");
    e.set_path("*");
    EXPECT_EQ(e.path, "*");
}

TEST(AccessLogTest, NoSecretInTheLine) {
    auto line = to_json_line(spec_entry());
    EXPECT_EQ(line.find("sk-secret"), std::string::npos);
    EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(AccessLogTest, InvalidUtf8DoesNotThrow) {
    AccessLogEntry e;
    e.host = "bad\xff\xfehost";
    e.set_path("/p\xc3");
    std::string line;
    EXPECT_NO_THROW(line = to_json_line(e));
    EXPECT_TRUE(nlohmann::json::accept(line));
}

TEST(AccessLogTest, FileSinkAppendsLines) {
    TempDir dir;
    const auto path = dir.file("access.log");
    { std::ofstream(path) << "previous line\n"; }
    {
        AccessLog log(path, 10);
        log.write(spec_entry());
        auto e = spec_entry();
        e.status = 502;
        log.write(e);
    }
    {
        AccessLog log(path, 10);
        log.write(spec_entry());
    }
    auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[0], "previous line");
    EXPECT_EQ(lines[1], to_json_line(spec_entry()));
    EXPECT_EQ(nlohmann::json::parse(lines[2])["status"], 502);
    EXPECT_EQ(lines[3], to_json_line(spec_entry()));
}

TEST(AccessLogTest, LineMatchesWhatAJsonLibraryWouldWrite) {
    auto e = spec_entry();
    e.host = "h\"o\\st\n\x01";
    e.reason = "private_address";
    e.client = "127.0.0.1";
    e.ms = 1234;
    const auto j = nlohmann::ordered_json::parse(to_json_line(e));
    EXPECT_EQ(j["host"], e.host);
    EXPECT_EQ(j["ms"].get<double>(), 1234.0);
    EXPECT_EQ(j["bytes_down"], 2048);
    EXPECT_EQ(j.dump(), to_json_line(e));
}

TEST(AccessLogTest, ALineReachesTheFileWithinTheFlushIntervalWithoutAnotherWrite) {
    TempDir dir;
    const auto path = dir.file("batched.log");
    AccessLog log(path, 10, std::chrono::milliseconds(20));
    log.write(spec_entry());
    // No further write and no flush() call: the background flush must deliver it.
    auto deadline = steady_clock::now() + seconds(5);
    while (read_lines(path).empty() && steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
    auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], to_json_line(spec_entry()));
}

TEST(AccessLogTest, ASinkThatFallsBehindDropsAndCountsLinesInsteadOfGrowing) {
    TempDir dir;
    const auto path = dir.file("capped.log");
    const auto one_line = to_json_line(spec_entry()).size() + 1;
    {
        // Room for two lines, and a flush interval long enough that none is written meanwhile.
        AccessLog log(path, 10, std::chrono::hours(1), one_line * 2);
        for (int i = 0; i < 5; ++i) log.write(spec_entry());
        EXPECT_EQ(log.dropped_lines(), 3u);
        EXPECT_EQ(log.recent(10).size(), 5u);  // the admin API still sees them all
    }
    EXPECT_EQ(read_lines(path).size(), 2u);
}

TEST(AccessLogTest, LinesAFullDiskRefusesAreCountedAsLost) {
    AccessLog log("/dev/full", 10, std::chrono::hours(1));
    log.write(spec_entry());
    log.write(spec_entry());
    log.flush();  // ENOSPC: both lines are lost, and counted
    EXPECT_EQ(log.dropped_lines(), 2u);
    EXPECT_EQ(log.recent(10).size(), 2u);  // the admin API still has them
}

// stdout as a non-blocking pipe to a collector that reads slower than lines
// come but keeps reading: every line arrives, none is counted as lost,
// however many times the writer has to wait for room.
TEST(AccessLogTest, ASlowButSteadyNonBlockingPipeLosesNothing) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    ASSERT_EQ(::fcntl(pipe_fds[1], F_SETFL, ::fcntl(pipe_fds[1], F_GETFL) | O_NONBLOCK), 0);
    const int saved_stdout = ::dup(STDOUT_FILENO);
    ASSERT_GE(saved_stdout, 0);
    ASSERT_EQ(::dup2(pipe_fds[1], STDOUT_FILENO), STDOUT_FILENO);

    // The collector: 16 KiB every 5 ms, until the writer's end is closed.
    std::size_t received = 0;
    std::thread collector([&] {
        char buf[16384];
        for (;;) {
            const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
            if (n <= 0) return;
            received += static_cast<std::size_t>(n);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    const std::size_t line_bytes = to_json_line(spec_entry()).size() + 1;
    const int lines = 20000;  // about 4 MiB: far more than the pipe holds
    std::uint64_t dropped = 0;
    {
        AccessLog log("stdout", 10, std::chrono::hours(1));
        for (int i = 0; i < lines; ++i) log.write(spec_entry());
        log.flush();
        dropped = log.dropped_lines();
    }
    ::dup2(saved_stdout, STDOUT_FILENO);
    ::close(saved_stdout);
    ::close(pipe_fds[1]);
    collector.join();
    ::close(pipe_fds[0]);
    EXPECT_EQ(dropped, 0u);
    EXPECT_EQ(received, line_bytes * lines);
}

TEST(AccessLogTest, NewFileIsNotWorldReadable) {
    TempDir dir;
    const auto path = dir.file("fresh.log");
    { AccessLog log(path); }
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0007, 0u);
}

TEST(AccessLogTest, UnopenablePathThrowsNamingIt) {
    try {
        AccessLog log("/nonexistent-dir-for-vaultgate/x.log");
        FAIL() << "opened an impossible path";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-for-vaultgate/x.log"), std::string::npos);
    }
}

TEST(AccessLogTest, RingIsBoundedAndNewestLast) {
    TempDir dir;
    const auto path = dir.file("ring.log");
    AccessLog log(path, 3);
    for (int i = 1; i <= 5; ++i) {
        auto e = spec_entry();
        e.status = 200 + i;
        log.write(e);
    }
    auto all = log.recent(100);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].status, 203);
    EXPECT_EQ(all[2].status, 205);
    auto two = log.recent(2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].status, 204);
    EXPECT_EQ(two[1].status, 205);
    EXPECT_TRUE(log.recent(0).empty());
}

TEST(AccessLogTest, ConcurrentWritesKeepLinesWhole) {
    TempDir dir;
    const auto path = dir.file("concurrent.log");
    {
        AccessLog log(path, 50);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&log] {
                for (int i = 0; i < 100; ++i) log.write(spec_entry());
            });
        for (auto& th : threads) th.join();
        EXPECT_EQ(log.recent(1000).size(), 50u);
    }
    auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), 400u);
    for (const auto& line : lines) ASSERT_EQ(line, to_json_line(spec_entry()));
}

}  // namespace
}  // namespace vaultgate
