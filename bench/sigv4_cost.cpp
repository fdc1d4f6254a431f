// bench/sigv4_cost.cpp -- CPU per request of vaultgate's aws-sigv4 step, in process.
//
// What an aws-sigv4 request costs beyond an api-key one is the signing step
// (sigv4_step.cpp): inspect the head, derive region and service from the host,
// hash the payload, build the canonical request and sign it. This times that
// step alone, on the thread's CPU clock (not wall time, so other load on the
// host matters less), for a small GET like bench/run.sh's keep-alive one and for
// a 1 KiB JSON POST, next to the api-key injection of the same head.
//
// Against the libraries of an optimised build (build/: -O2, see CMakeLists.txt):
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude bench/sigv4_cost.cpp
//       build/libvaultgate_{credentials,egress,observe,signing,http,crypto,util}.a
//       -lidn2 -lssl -lcrypto -lpthread -o /tmp/sigv4_cost && /tmp/sigv4_cost
#include "vaultgate/credentials/inject.hpp"
#include "vaultgate/signing/sigv4.hpp"

#include <time.h>

#include <cstdio>
#include <string>

using namespace vaultgate;

namespace {

double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

RequestHead bench_head(const char* method, const char* target) {
    RequestHead h;
    h.method = method;
    h.target = target;
    h.headers = {{"Host", "bedrock-runtime.us-east-1.amazonaws.com"},
                 {"User-Agent", "loadgen/1.0"},
                 {"Accept", "*/*"},
                 {"Content-Type", "application/json"},
                 {"X-Amz-Date", "19990101T000000Z"},
                 {"Authorization", "AWS4-HMAC-SHA256 Credential=PLACEHOLDER/19990101/us-east-1/bedrock/aws4_request, "
                                   "SignedHeaders=host;x-amz-date, Signature=00"}};
    return h;
}

template <class Step>
double per_call_us(int n, Step step) {
    for (int i = 0; i < n / 10; ++i) step();  // warm up
    const double start = thread_cpu_us();
    for (int i = 0; i < n; ++i) step();
    return (thread_cpu_us() - start) / n;
}

}  // namespace

int main() {
    const Secret access_key_id("AKIAIOSFODNN7EXAMPLE");
    const Secret secret_access_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    const std::string body(1024, 'j');
    constexpr int n = 200000;

    auto sign = [&](const char* method, const char* target, std::string_view payload) {
        RequestHead head = bench_head(method, target);
        const sigv4::Inspection inspection = sigv4::inspect(head);
        std::string why;
        const auto scope = sigv4::derive_scope(*head.get("host"), "", "", &why);
        const std::string hash = inspection.hash_body ? sigv4::payload_sha256_hex(payload) : inspection.payload_hash;
        sigv4::sign_request(head, *scope, sigv4::Keys{access_key_id.reveal(), secret_access_key, nullptr}, hash,
                            std::chrono::system_clock::now());
    };
    AuthSpec api_key;
    api_key.type = AuthType::api_key;
    const double inject = per_call_us(n, [&] {
        RequestHead head = bench_head("GET", "/model/x/invoke");
        inject_credential(head, api_key, secret_access_key);
    });
    const double get = per_call_us(n, [&] { sign("GET", "/model/anthropic.claude-v2/invoke", ""); });
    const double post = per_call_us(n, [&] { sign("POST", "/model/anthropic.claude-v2/invoke", body); });
    std::printf("api-key injection (head copy included): %.2f us\n", inject);
    std::printf("aws-sigv4 GET, empty body (head copy included): %.2f us (+%.2f us)\n", get, get - inject);
    std::printf("aws-sigv4 POST, 1 KiB body hashed (head copy included): %.2f us (+%.2f us)\n", post, post - inject);
}
