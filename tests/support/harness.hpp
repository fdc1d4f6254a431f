#pragma once
// Test fixtures that start real things on 127.0.0.1: the test PKI, a TLS
// upstream that records what it received, the proxy in-process or as a child
// process, and clients (a raw socket client and curl).
#include "raw_client.hpp"
#include "recording_upstream.hpp"
#include "serve_process.hpp"
#include "temp_dir.hpp"
#include "test_pki.hpp"
#include "vaultgate/app/server.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/state/gateway_state.hpp"
#include "vaultgate/util/encoding.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vaultgate::test {

// The proxy, in-process, on 127.0.0.1:0, from YAML text.
class ProxyUnderTest {
public:
    explicit ProxyUnderTest(const std::string& yaml, unsigned threads = 2);
    ~ProxyUnderTest();
    std::uint16_t port() const { return server_->proxy_port(); }
    Server& server() { return *server_; }
    const Config& config() const { return config_; }
    std::string access_log_text() const;  // the file the config's log.access names
    bool wait_for_log(const std::string& needle, int timeout_ms = 5000) const;

private:
    Config config_;
    std::unique_ptr<Server> server_;
};

// A config for `vaultgate serve` as a child process: ports 0, an admin token
// and a master key written into `dir`, api.bound.test bound to the test secret,
// other.test allowed, and a default session. `limits` and `extra` are appended
// YAML (a `limits:` block body, and further top-level keys).
std::string serve_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                         const std::string& limits = "", const std::string& allowed_extra = "");

// Stops the proxy, which writes its last batch of access-log lines, and returns
// the whole log: for checks that must see every line, such as "no secret".
std::string stop_and_read_access_log(std::unique_ptr<ProxyUnderTest>& proxy);

// A port that was free a moment ago (for configs that must name a port up front).
std::uint16_t free_port(const std::string& ip = "127.0.0.1");

// Checks `condition` every 10 ms until it holds (true) or timeout_ms pass
// (false): for outcomes that follow a request asynchronously.
bool eventually(const std::function<bool()>& condition, int timeout_ms = 5000);

// Opens `count` clients with `open` and sends each `request` for /sse, then
// waits until the origin has all of them in flight, each on an upstream
// connection of its own (it holds /sse open until release_sse()).
std::vector<std::unique_ptr<RawClient>> hold_sse_exchanges(RecordingUpstream& origin, std::size_t count,
                                                           const std::function<std::unique_ptr<RawClient>()>& open,
                                                           const std::string& request);

// Releases the held /sse responses and expects each client to get its 200.
void finish_sse_exchanges(RecordingUpstream& origin, std::vector<std::unique_ptr<RawClient>>& clients);

// A config with the proxy on port 0, the test PKI, a bound service for
// api.bound.test on the upstream's port, and other.test allowed.
std::string base_config(const TempDir& dir, const TestPki& pki, std::uint16_t bound_port, std::uint16_t other_port,
                        const std::string& extra_service_yaml = "", const std::string& extra_policy_yaml = "");

// Has '/', '+' and '=' so that its base64 and URL-encoded forms differ from it.
inline constexpr const char* test_secret = "sk-real/SECRET+9f8e=7d6c5b4a";

}  // namespace vaultgate::test
