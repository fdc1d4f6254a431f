#pragma once
// Whether a request path lies under a bound service's path_prefix. The answer
// must hold for every origin: Tomcat, Spring, nginx, Go and others each
// normalise paths their own way (path parameters, decoded separators, dot
// segments, lax UTF-8), so coverage is only decided on a path that none of
// them can read as another one. Pure functions, no I/O.
#include <string_view>

namespace vaultgate {

// True when no origin can read `path` (a query string is ignored) as another
// path: it has no ';' path parameter, '\\', '#', dot segment ("." or "..",
// also followed by spaces, or longer runs of dots), and no percent escape
// that is malformed or stands for '.', '/', '\\', ';', '%' (double encoding)
// or a control byte; decoded, it is valid, shortest-form UTF-8.
bool is_plain_path(std::string_view path);

// True when path lies under prefix: "/" covers every path; any other prefix
// ("/api" covers "/api" and "/api/...", not "/apix") only a plain path
// (is_plain_path) that starts with it. A query string is ignored.
bool path_has_prefix(std::string_view path, std::string_view prefix);

}  // namespace vaultgate
