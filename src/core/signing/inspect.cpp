// What a request must look like before vaultgate can re-sign it, and where its
// payload hash comes from. Streaming uploads sign every chunk with a chain of
// signatures seeded by the header signature, and presigned URLs carry their
// signature in the query: vaultgate can re-sign neither, so both are refused
// with a message that says which, rather than forwarded to fail at AWS.
#include "vaultgate/signing/sigv4.hpp"

#include "text.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/util/encoding.hpp"

namespace vaultgate::sigv4 {

namespace {

constexpr std::string_view presigned_message =
    "presigned URLs (X-Amz-Signature in the query) cannot be re-signed; send the request unsigned";
constexpr std::string_view chunked_message =
    "Content-Encoding aws-chunked (a streaming upload) cannot be re-signed; send the payload in one piece";
constexpr std::string_view streaming_message =
    "streaming payloads (X-Amz-Content-Sha256: STREAMING-*) cannot be re-signed; send the payload in one piece";
constexpr std::string_view repeated_hash_message = "several X-Amz-Content-Sha256 headers: send one";

bool starts_with_ignoring_case(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// The query parameters that make a URL a presigned one. The name is decoded
// first, so "X-Amz-%53ignature" is caught as well.
bool names_presigned_parameter(std::string_view name) {
    const std::string decoded = percent_decoded(name);
    return iequals(decoded, "x-amz-signature") || iequals(decoded, "x-amz-credential") ||
           iequals(decoded, "x-amz-algorithm");
}

bool is_presigned(std::string_view target) {
    const std::size_t question = target.find('?');
    if (question == std::string_view::npos) return false;
    std::string_view query = target.substr(question + 1);
    while (true) {
        const std::size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        if (names_presigned_parameter(pair.substr(0, pair.find('=')))) return true;
        if (amp == std::string_view::npos) return false;
        query.remove_prefix(amp + 1);
    }
}

bool has_aws_chunked_coding(const RequestHead& head) {
    for (const Header& h : head.headers) {
        if (!iequals(h.name, "content-encoding")) continue;
        std::string_view codings = h.value;
        while (true) {
            const std::size_t comma = codings.find(',');
            if (iequals(trimmed(codings.substr(0, comma)), "aws-chunked")) return true;
            if (comma == std::string_view::npos) break;
            codings.remove_prefix(comma + 1);
        }
    }
    return false;
}

}  // namespace

Inspection inspect(const RequestHead& head) {
    Inspection r;
    if (is_presigned(head.target)) {
        r.unsupported = presigned_message;
        return r;
    }
    if (has_aws_chunked_coding(head)) {
        r.unsupported = chunked_message;
        return r;
    }
    const std::size_t hash_headers = head.count("x-amz-content-sha256");
    if (hash_headers > 1) {
        r.unsupported = repeated_hash_message;
        return r;
    }
    if (hash_headers == 1) {
        const std::string_view value = trimmed(*head.get("x-amz-content-sha256"));
        if (starts_with_ignoring_case(value, "STREAMING-")) {
            r.unsupported = streaming_message;
            return r;
        }
        if (is_payload_hash(value)) {
            r.payload_hash = value;
            return r;
        }
    }
    r.hash_body = true;
    return r;
}

std::string payload_sha256_hex(std::string_view body) { return token_digest(body); }

bool is_payload_hash(std::string_view value) {
    if (value == unsigned_payload) return true;
    if (value.size() != 64) return false;
    for (char c : value)
        if (hex_digit_value(c) < 0) return false;
    return true;
}

}  // namespace vaultgate::sigv4
