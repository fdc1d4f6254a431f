// Path prefix coverage by table: a path is covered by a prefix other than "/"
// only when no origin can read it as another path.
#include "vaultgate/credentials/path_prefix.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vaultgate {
namespace {

// Each is read by some origin as /admin (or somewhere else outside /v1/).
const char* const bypass_paths[] = {
    "/v1/..;/admin",              // Tomcat, Spring: path parameter, then ".."
    "/v1/..;jsessionid=1/admin",  // the same with a named parameter
    "/v1/%2e%2e%3b/admin",        // escaped dots and ';'
    "/v1#/../admin",              // a fragment, forwarded
    "/v1/#/../admin",
    "/v1/%252e%252e/admin",    // decoded twice
    "/v1/%c0%ae%c0%ae/admin",  // overlong UTF-8 for '.'
    "/v1/..%00/admin",         // NUL, cut by C-based servers
    "/v1/..%20/admin",         // trailing space trimmed (Spring trimTokens)
    "/v1/%20..%20/admin",
    "/v1/%2E%2E/admin",  // upper-case escapes
    "/v1/.%2e/admin",
    "/v1/..%2fadmin",  // escaped '/'
    "/v1/..%2Fadmin",
    "/v1/..%5cadmin",  // escaped '\'
    "/v1/..\\admin",   // raw '\'
    "/v1/x;a=b",       // any path parameter
    "/v1/%3B",
    "/v1/../admin",  // plain dot segments
    "/v1/./x",
    "/v1/..",
    "/v1/.../admin",           // runs of dots, which some servers shorten
    "/v1/%u002e%u002e/admin",  // IIS %u escapes: malformed here
    "/v1/a%2",                 // an escape cut short
    "/v1/a%zz",
    "/v1/%25",                     // any double encoding
    "/v1/%c1%9c",                  // overlong '\'
    "/v1/%e0%80%ae",               // three-byte overlong '.'
    "/v1/%f0%80%80%ae",            // four-byte overlong '.'
    "/v1/%ed%a0%80",               // UTF-16 surrogate
    "/v1/%ff",                     // no UTF-8 at all
    "/v1/\xc0\xae\xc0\xae/admin",  // raw overlong bytes (the parser refuses them before this)
    "/v1/\xc1\x9c",
    "/v1/%0a",  // control bytes
    "/v1/%09..",
    "/v1/%7f",
};

TEST(PathPrefixTest, BypassPathsAreNeverCoveredByANarrowPrefix) {
    for (const char* path : bypass_paths) {
        EXPECT_FALSE(is_plain_path(path)) << path;
        EXPECT_FALSE(path_has_prefix(path, "/v1/")) << path;
        EXPECT_FALSE(path_has_prefix(path, "/v1")) << path;
        // Whatever an origin makes of it, it stays under "/".
        EXPECT_TRUE(path_has_prefix(path, "/")) << path;
    }
}

struct PrefixCase {
    const char* path;
    const char* prefix;
    bool want;
};

TEST(PathPrefixTest, Table) {
    const PrefixCase cases[] = {
        {"/", "/", true},
        {"/anything/at/all", "/", true},
        {"/v1/ok", "/v1/", true},
        {"/v1/a%20b", "/v1/", true},      // an escaped space is just a character
        {"/v1/%41", "/v1/", true},        // so is an escaped letter
        {"/v1/caf%C3%A9", "/v1/", true},  // and valid UTF-8
        {"/v1/", "/v1/", true},
        {"/v1//x", "/v1/", true},                // merged slashes stay under the prefix
        {"/v1/ok?x=/../..;%2e#", "/v1/", true},  // the query is not part of the path
        {"/v1/..x/y", "/v1/", true},             // a name starting with dots is not a dot segment
        {"/v1/.well-known", "/v1/", true},
        {"/v1/a.b", "/v1/", true},
        {"/v1", "/v1/", false},
        {"/v1x", "/v1/", false},
        {"/V1/ok", "/v1/", false},
        {"/%761/ok", "/v1/", false},  // compared as written
        {"/api", "/api", true},
        {"/api/", "/api", true},
        {"/api/x/y", "/api", true},
        {"/api?q=1", "/api", true},
        {"/api#f", "/api", false},
        {"/apix", "/api", false},
        {"/apix/y", "/api", false},
        {"/ap", "/api", false},
        {"/", "/api", false},
        {"", "/api", false},
        {"/v1/api", "/api", false},
        {"/x?/api", "/api", false},
        {"/api;x/y", "/api", false},
        {"/api%2f..%2fadmin", "/api", false},
    };
    for (const auto& c : cases) EXPECT_EQ(path_has_prefix(c.path, c.prefix), c.want) << c.path << " under " << c.prefix;
}

TEST(PathPrefixTest, PlainPaths) {
    for (const char* path : {"/", "/v1/ok", "/v1/a%20b", "/v1/%41", "/a/b.c/..d/e..", "/~user/x-y_z", "/a?b=..;",
                             "/%e2%82%ac", "/a+b", "/a:b@c"})
        EXPECT_TRUE(is_plain_path(path)) << path;
}

}  // namespace
}  // namespace vaultgate
