#pragma once
// The HTTP/2 origin connections of one I/O thread, by the upstream pool's key
// (session, origin, settings generation): a connection is never shared
// between sessions, and one per key carries all of that session's requests
// to that origin on the thread. A connection lives as long as its own
// coroutines run; the registry only finds it.
//
// Dials are single-flight per key: while one request dials (offering h2),
// the others for that key wait for it instead of opening connections the h2
// one would make redundant. A key whose last dial chose HTTP/1.1 skips that
// wait, so HTTP/1.1 origins dial in parallel as before.
#include "net/forward/h2_origin.hpp"
#include "net/io/types.hpp"

#include <map>
#include <memory>
#include <set>
#include <string>

namespace vaultgate::net {

class H2OriginRegistry {
public:
    // An open connection for `key` that takes new streams; null when none.
    std::shared_ptr<H2OriginConnection> find(const std::string& key);
    void add(const std::string& key, const std::shared_ptr<H2OriginConnection>& conn);

    // True: the caller dials for `key` and calls end_dial when done. False:
    // another dial is under way; wait_for_dial, then look again.
    bool begin_dial(const std::string& key);
    // `chose_h2`: what the origin's ALPN answer was.
    void end_dial(const std::string& key, bool chose_h2);
    awaitable<void> wait_for_dial(const std::string& key, clock::duration timeout);

private:
    std::map<std::string, std::weak_ptr<H2OriginConnection>> open_;
    std::map<std::string, std::shared_ptr<asio::steady_timer>> dials_;
    std::set<std::string> http11_;  // keys whose origin chose HTTP/1.1 last time
};

// The registry of the calling I/O thread.
H2OriginRegistry& this_thread_h2_origins();

}  // namespace vaultgate::net
