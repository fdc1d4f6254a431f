// The SigV4 signature and the rewrite of a request head that carries it.
// The secret access key only ever sits in the caller's Secret and in wiped
// buffers here; the derived keys are wiped when they go out of scope.
#include "vaultgate/signing/sigv4.hpp"

#include "text.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/crypto/key_derivation.hpp"
#include "vaultgate/util/encoding.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <ctime>
#include <stdexcept>

namespace vaultgate::sigv4 {

namespace {

constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";

// HMAC-SHA256 of `data` under `key` into `out` (32 bytes). The one-shot HMAC()
// looks the algorithm up again on every call; a signature takes five, so each
// thread keeps one fetched context and only re-keys it. The context holds the
// last key's state until the next key: forget_key() replaces it at the end of
// each signature, so no key derived from the secret outlives the call.
class ThreadHmac {
public:
    ThreadHmac() {
        EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
        if (mac != nullptr) {
            ctx_ = EVP_MAC_CTX_new(mac);
            EVP_MAC_free(mac);  // the context holds its own reference
        }
        char digest[] = "SHA256";
        const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                     OSSL_PARAM_construct_end()};
        if (ctx_ != nullptr && EVP_MAC_CTX_set_params(ctx_, params) != 1) {
            EVP_MAC_CTX_free(ctx_);
            ctx_ = nullptr;
        }
    }
    ~ThreadHmac() { EVP_MAC_CTX_free(ctx_); }
    ThreadHmac(const ThreadHmac&) = delete;
    ThreadHmac& operator=(const ThreadHmac&) = delete;

    void compute(const unsigned char* key, std::size_t key_len, std::string_view data, DerivedKey& out) {
        std::size_t len = 0;
        if (ctx_ == nullptr || EVP_MAC_init(ctx_, key, key_len, nullptr) != 1 ||
            EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
            EVP_MAC_final(ctx_, out.bytes.data(), &len, out.bytes.size()) != 1 || len != out.bytes.size())
            throw CryptoError("HMAC-SHA256 failed");
    }

    void forget_key() {
        static constexpr unsigned char blank = 0;
        if (ctx_ != nullptr) EVP_MAC_init(ctx_, &blank, 1, nullptr);
    }

private:
    EVP_MAC_CTX* ctx_ = nullptr;
};

ThreadHmac& thread_hmac() {
    thread_local ThreadHmac hmac;
    return hmac;
}

// Forgets the last key when the signature is done or has failed.
struct ForgetKeyAtExit {
    ThreadHmac& hmac;
    ~ForgetKeyAtExit() { hmac.forget_key(); }
};

bool is_amz_date(std::string_view d) {
    if (d.size() != 16 || d[8] != 'T' || d[15] != 'Z') return false;
    for (std::size_t i = 0; i < 15; ++i)
        if (i != 8 && (d[i] < '0' || d[i] > '9')) return false;
    return true;
}

void require_scope(const Scope& scope) {
    if (!is_scope_element(scope.region)) throw std::invalid_argument("the SigV4 region is not a region name");
    if (!is_scope_element(scope.service)) throw std::invalid_argument("the SigV4 service is not a service name");
}

// Access key ids are upper-case letters and digits; anything that could end
// the Credential field or the header is refused.
void require_access_key_id(std::string_view id) {
    if (id.empty() || id.size() > 128) throw std::invalid_argument("the AWS access key id is empty or too long");
    for (char ch : id) {
        const auto c = static_cast<unsigned char>(ch);
        if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',' || c == '=')
            throw std::invalid_argument("the AWS access key id contains bytes that cannot be signed");
    }
}

void require_header_value(std::string_view value, const char* what) {
    for (char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) throw std::invalid_argument(std::string(what) + " cannot go into a header field");
    }
}

bool in_signed_set(std::string_view lower_name) {
    return lower_name == "host" || lower_name == "content-type" || lower_name.starts_with("x-amz-");
}

}  // namespace

std::string amz_date(std::chrono::system_clock::time_point now) {
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return std::string(buf, n);
}

std::string credential_scope(std::string_view amz_date, const Scope& scope) {
    return std::string(amz_date.substr(0, 8)) + '/' + scope.region + '/' + scope.service + "/aws4_request";
}

std::string string_to_sign(std::string_view amz_date, const Scope& scope, std::string_view canonical_request) {
    return std::string(algorithm) + '\n' + std::string(amz_date) + '\n' + credential_scope(amz_date, scope) + '\n' +
           token_digest(canonical_request);
}

std::string signature(const Secret& secret_access_key, std::string_view amz_date, const Scope& scope,
                      std::string_view string_to_sign) {
    if (!is_amz_date(amz_date)) throw std::invalid_argument("the SigV4 date is not in the form 20150830T123600Z");
    WipedBytes first_key;
    first_key.append("AWS4", 4);
    first_key.append(secret_access_key.reveal().data(), secret_access_key.size());
    ThreadHmac& hmac = thread_hmac();
    const ForgetKeyAtExit forget{hmac};
    DerivedKey date_key, region_key, service_key, signing_key, result;
    hmac.compute(first_key.data(), first_key.size(), amz_date.substr(0, 8), date_key);
    hmac.compute(date_key.bytes.data(), date_key.bytes.size(), scope.region, region_key);
    hmac.compute(region_key.bytes.data(), region_key.bytes.size(), scope.service, service_key);
    hmac.compute(service_key.bytes.data(), service_key.bytes.size(), "aws4_request", signing_key);
    hmac.compute(signing_key.bytes.data(), signing_key.bytes.size(), string_to_sign, result);
    return hex_encode(std::string_view(reinterpret_cast<const char*>(result.bytes.data()), result.bytes.size()),
                      /*upper_hex=*/false);
}

std::string authorization_value(std::string_view access_key_id, std::string_view amz_date, const Scope& scope,
                                std::string_view signed_header_list, std::string_view signature) {
    return std::string(algorithm) + " Credential=" + std::string(access_key_id) + '/' +
           credential_scope(amz_date, scope) + ", SignedHeaders=" + std::string(signed_header_list) +
           ", Signature=" + std::string(signature);
}

std::vector<std::pair<std::string, std::string>> signed_headers(const RequestHead& head) {
    // Fields the head names in Connection are dropped on the way out, so they
    // are never signed.
    const std::vector<std::string> hop_tokens = connection_tokens(head.headers);
    std::vector<std::pair<std::string, std::string>> out;
    for (const Header& h : head.headers) {
        std::string name = lowered(h.name);
        if (in_signed_set(name) && !is_hop_by_hop(name) && !listed_in(hop_tokens, name))
            out.emplace_back(std::move(name), h.value);
    }
    return out;
}

void sign_request(RequestHead& head, const Scope& scope, const Keys& keys, std::string_view payload_hash,
                  std::chrono::system_clock::time_point now) {
    require_scope(scope);
    require_access_key_id(keys.access_key_id);
    if (keys.secret_access_key.empty()) throw std::invalid_argument("the AWS secret access key is empty");
    if (keys.session_token) {
        if (keys.session_token->empty()) throw std::invalid_argument("the AWS session token is empty");
        require_header_value(keys.session_token->reveal(), "the AWS session token");
    }
    if (!is_payload_hash(payload_hash))
        throw std::invalid_argument("the payload hash is neither 64 hex digits nor UNSIGNED-PAYLOAD");
    if (head.target.empty() || head.target.front() != '/')
        throw std::invalid_argument("only an origin-form request target can be signed");
    if (head.count("host") != 1 || head.get("host")->empty())
        throw std::invalid_argument("a request to sign needs exactly one non-empty Host header");

    head.remove("authorization");
    head.remove("x-amz-date");
    head.remove("x-amz-security-token");
    const std::string date = amz_date(now);
    head.headers.push_back({"X-Amz-Date", date});
    // The header is the payload hash the origin checks: it must say what the
    // canonical request says.
    const auto client_hash = head.get("x-amz-content-sha256");
    const bool hash_header_wrong =
        client_hash && (head.count("x-amz-content-sha256") != 1 || *client_hash != payload_hash);
    if (hash_header_wrong || (!client_hash && is_s3_service(scope.service)))
        head.set("X-Amz-Content-Sha256", std::string(payload_hash));
    if (keys.session_token) head.headers.push_back({"X-Amz-Security-Token", std::string(keys.session_token->reveal())});

    std::vector<std::pair<std::string, std::string>> to_sign = signed_headers(head);
    std::string request =
        canonical_request(head.method, head.target, to_sign, payload_hash, is_s3_service(scope.service));
    const std::string sig = signature(keys.secret_access_key, date, scope, string_to_sign(date, scope, request));
    head.headers.push_back(
        {"Authorization", authorization_value(keys.access_key_id, date, scope, signed_header_list(to_sign), sig)});
    // The canonical request and the list held copies of the session token.
    if (keys.session_token) {
        wipe_string(request);
        for (auto& [name, value] : to_sign) wipe_string(value);
    }
}

}  // namespace vaultgate::sigv4
