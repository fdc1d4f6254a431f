#pragma once
// AWS Signature Version 4, header form: the canonical request, the string to
// sign, the signing key and the Authorization header, built exactly as AWS
// builds them, plus the region/service derivation from an endpoint host and
// the checks a request must pass before it can be signed. No I/O here.
//
// The signed set is host, x-amz-date, x-amz-content-sha256 (when present),
// x-amz-security-token (when a session token is set), content-type (when
// present) and every other x-amz-* header. vaultgate itself only ever adds or
// rewrites Host (final before signing), Content-Length, Transfer-Encoding,
// Connection, Upgrade, Expect and Accept-Encoding, none of which can be in that
// set, so nothing it changes after signing can break the signature.
#include "vaultgate/http/message.hpp"
#include "vaultgate/util/secret.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vaultgate::sigv4 {

struct Scope {
    std::string region;
    std::string service;
};

// Region and service as AWS's endpoint rules give them, each overridable
// (empty = derive): service.region.amazonaws.com (and .com.cn),
// bedrock-runtime.REGION... signing as "bedrock", S3 path-style and
// virtual-host forms (s3.amazonaws.com = us-east-1), dualstack and fips forms,
// VPC endpoint forms, and the global STS, IAM, Route 53 and CloudFront
// endpoints (us-east-1). `host` may carry a port and a trailing dot. nullopt
// with *why set (plain prose, no host bytes) when a part cannot be derived and
// has no override, or when an override is not a valid scope element.
std::optional<Scope> derive_scope(std::string_view host, std::string_view region_override,
                                  std::string_view service_override, std::string* why);

// What a request needs before it can be signed (headers from the parsed head).
struct Inspection {
    // Non-empty: refuse with 400 sigv4_unsupported, this is the message
    // (STREAMING-* payload hash, Content-Encoding aws-chunked, X-Amz-Signature
    // in the query = presigned URL). Fixed prose, never request bytes.
    std::string unsupported;
    // The client's x-amz-content-sha256 when it is 64 hex digits or UNSIGNED-PAYLOAD.
    std::string payload_hash;
    // Else vaultgate must read the body and hash it (payload_sha256_hex).
    bool hash_body = false;
};
Inspection inspect(const RequestHead& head);

// Lower-case hex SHA-256 of the body; of "" it is the empty-body hash.
std::string payload_sha256_hex(std::string_view body);

inline constexpr std::string_view unsigned_payload = "UNSIGNED-PAYLOAD";

// 64 hex digits or UNSIGNED-PAYLOAD: what sign_request takes as the payload hash.
bool is_payload_hash(std::string_view value);

struct Keys {
    std::string_view access_key_id;
    const Secret& secret_access_key;
    const Secret* session_token = nullptr;
};

// Rewrites `head` (origin-form target, Host already final): removes every
// Authorization, X-Amz-Date and X-Amz-Security-Token the client sent (any
// case), sets X-Amz-Date (and X-Amz-Content-Sha256 for S3 when absent, or to
// `payload_hash` when the client's copy says something else),
// X-Amz-Security-Token when a session token is given, and Authorization.
// Throws std::invalid_argument (a message without secrets) on input it cannot
// sign: no or several Host headers, a target that is not origin-form, a bad
// payload hash, an access key id or token that cannot go into a header.
// The secret key and every derived key live in Secret or wiped buffers only;
// the session token ends up in a header value of `head`, which the caller
// wipes (wipe_string) after serialising, as for any injected credential.
void sign_request(RequestHead& head, const Scope& scope, const Keys& keys, std::string_view payload_hash,
                  std::chrono::system_clock::time_point now);

// The pieces, for the test vectors and the fuzz target.

// "METHOD\nURI\nQUERY\nHEADERS\n\nSIGNED\nPAYLOAD". `target` is origin-form
// (path and query as sent). Non-S3 paths are normalised (dot segments and
// empty segments removed) and percent-encoded once more, so an escape the
// client sent is encoded twice; S3 paths are not normalised and each byte is
// encoded once, "%2F" staying "%2F". Query parameters are decoded, encoded
// with the unreserved set (space as %20) and sorted by name, then value.
// Header names are lower-cased and sorted; values trimmed, runs of spaces
// collapsed, and repeated headers joined with ','.
std::string canonical_request(std::string_view method, std::string_view target,
                              const std::vector<std::pair<std::string, std::string>>& signed_headers /*name,value*/,
                              std::string_view payload_hash, bool s3);

// The second and third lines of the canonical request, on their own.
std::string canonical_uri(std::string_view path, bool s3);
std::string canonical_query(std::string_view query);

// The SignedHeaders list of the same headers: "host;x-amz-date".
std::string signed_header_list(const std::vector<std::pair<std::string, std::string>>& signed_headers);

// "20150830T123600Z" for the given instant, in UTC.
std::string amz_date(std::chrono::system_clock::time_point now);

// "20150830/us-east-1/service/aws4_request".
std::string credential_scope(std::string_view amz_date, const Scope& scope);

// "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256 of the canonical request>".
std::string string_to_sign(std::string_view amz_date, const Scope& scope, std::string_view canonical_request);

// Lower-case hex HMAC of the string to sign under the key derived from the
// secret for the date, region and service.
std::string signature(const Secret& secret_access_key, std::string_view amz_date, const Scope& scope,
                      std::string_view string_to_sign);

// "AWS4-HMAC-SHA256 Credential=<id>/<scope>, SignedHeaders=<list>, Signature=<hex>".
std::string authorization_value(std::string_view access_key_id, std::string_view amz_date, const Scope& scope,
                                std::string_view signed_header_list, std::string_view signature);

// Whether a service signs as S3 (no path normalisation, single encoding).
bool is_s3_service(std::string_view service);

}  // namespace vaultgate::sigv4
