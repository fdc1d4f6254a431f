#include "net/upstream/https_client.hpp"

#include "net/io/tls_socket.hpp"
#include "net/io/watchdog.hpp"
#include "net/upstream/dialer.hpp"
#include "net/upstream/tls_contexts.hpp"
#include "vaultgate/egress/host.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/util/wiping_allocator.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace vaultgate::net {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace urls = boost::urls;

std::optional<std::string> HttpsResponse::header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (iequals(n, name)) return v;
    return std::nullopt;
}

namespace {

constexpr std::uint32_t max_head = 64 * 1024;

// Header fields, the read buffer and the body may hold a credential (an
// Authorization header, a client secret, a minted token): all of their memory
// is wiped when freed.
using Fields = http::basic_fields<WipingAllocator<char>>;
using Request = http::request<http::span_body<const char>, Fields>;
using ResponseBody = http::basic_string_body<char, std::char_traits<char>, WipingAllocator<char>>;
using ReadBuffer = beast::basic_flat_buffer<WipingAllocator<char>>;

struct Target {
    Authority authority;
    std::string origin;  // https://HOST:PORT, what messages name
    std::string path;    // path and query
};

[[noreturn]] void fail(HttpsError::Kind kind, const Target& target, const std::string& why) {
    throw HttpsError(kind, target.origin + ": " + why);
}

Target parse_target(const std::string& url) {
    // The URL is quoted back no further than its host: its query may hold a secret.
    auto parsed = urls::parse_uri(url);
    if (!parsed || parsed->scheme_id() != urls::scheme::https || !parsed->has_authority() ||
        parsed->encoded_host().empty())
        throw HttpsError(HttpsError::Kind::bad_url, "outbound HTTPS: expected https://HOST[:PORT][/PATH]");
    if (parsed->has_userinfo())
        throw HttpsError(HttpsError::Kind::bad_url, "outbound HTTPS: a user name or password in the URL is not sent");
    auto authority = parse_authority(parsed->encoded_host_and_port(), 443);
    if (!authority)
        throw HttpsError(HttpsError::Kind::bad_url, "outbound HTTPS: https://" + std::string(parsed->encoded_host()) +
                                                        " is not a host vaultgate accepts");
    Target target;
    target.authority = *authority.authority;
    target.origin = "https://" + format_authority(target.authority);
    target.path = parsed->encoded_target();
    if (target.path.empty()) target.path = "/";
    return target;
}

Request build_request(const HttpsRequest& in, const Target& target) {
    Request request;
    request.method_string(in.method);
    request.target(target.path);
    request.version(11);
    request.set(http::field::host, format_authority(target.authority, target.authority.port != 443));
    for (const auto& [name, value] : in.headers) request.insert(name, value);
    if (request.find(http::field::user_agent) == request.end())
        request.set(http::field::user_agent, "vaultgate/" VAULTGATE_VERSION);
    if (!in.body.empty() || (in.method != "GET" && in.method != "HEAD")) request.content_length(in.body.size());
    request.keep_alive(false);
    request.body() = {in.body.data(), in.body.size()};
    return request;
}

std::string in_ms(clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// The answer, after any interim (1xx) ones.
awaitable<HttpsResponse> read_response(TlsSocket& tls, Watchdog& watchdog, const HttpsRequest& request,
                                       const HttpsLimits& limits, const Target& target) {
    ReadBuffer buffer;
    for (;;) {
        http::response_parser<ResponseBody, WipingAllocator<char>> parser;
        parser.header_limit(max_head);
        parser.body_limit(limits.max_body);
        if (request.method == "HEAD") parser.skip(true);
        auto [ec, n] = co_await http::async_read(tls, buffer, parser, use_tuple);
        // A body that ends with the connection may end without close_notify,
        // as the proxy also accepts from upstreams.
        if (ec == ssl::error::stream_truncated && parser.is_header_done() && parser.need_eof()) parser.put_eof(ec);
        if (ec) {
            if (watchdog.expired())
                fail(HttpsError::Kind::timeout, target, "no complete answer within " + in_ms(limits.total_timeout));
            if (ec == http::error::body_limit)
                fail(HttpsError::Kind::too_large, target,
                     "the response body is larger than " + std::to_string(limits.max_body) + " bytes");
            fail(HttpsError::Kind::protocol, target, "reading the response failed: " + ec.message());
        }
        auto& message = parser.get();
        if (message.result_int() < 200) continue;
        HttpsResponse response;
        response.status = static_cast<int>(message.result_int());
        for (const auto& field : message) response.headers.emplace_back(field.name_string(), field.value());
        response.body = Secret(std::string(message.body().data(), message.body().size()));
        co_return response;
    }
}

}  // namespace

awaitable<HttpsResponse> https_request(Runtime& rt, const HttpsRequest& request, const HttpsLimits& limits) {
    const Target target = parse_target(request.url);
    const auto deadline = clock::now() + limits.total_timeout;
    auto executor = co_await asio::this_coro::executor;
    std::optional<TlsSocket> tls;  // declared first, so the watchdog stops before it goes
    auto watchdog = std::make_shared<Watchdog>(executor);
    watchdog->start();
    WatchdogStop stop_watchdog(watchdog);

    // The upstreams' address rules: a public address, or one pinned by upstream.resolve.
    static const EgressPolicy address_rules{};
    tcp::socket socket(executor);
    const auto settings = rt.settings();
    const DialOutcome dialed = co_await dial_checked(rt, *settings, address_rules, target.authority, socket, *watchdog);
    if (dialed.denied != DenyReason::none)
        fail(HttpsError::Kind::refused, target, "refused: " + std::string(deny_reason_name(dialed.denied)));
    if (dialed.timed_out) fail(HttpsError::Kind::timeout, target, "no connection within limits.connect_timeout");
    if (dialed.error) fail(HttpsError::Kind::unreachable, target, "cannot connect: " + dialed.error.message());
    if (clock::now() >= deadline)
        fail(HttpsError::Kind::timeout, target, "no complete answer within " + in_ms(limits.total_timeout));

    tls.emplace(std::move(socket), *settings->upstream_tls);
    if (!expect_upstream_identity(*tls, target.authority)) fail(HttpsError::Kind::tls, target, "cannot set up TLS");
    watchdog->watch(tls->next_layer());
    watchdog->arm(deadline - clock::now());
    auto [handshake_error] = co_await tls->async_handshake(ssl::stream_base::client, use_tuple);
    if (handshake_error) {
        if (watchdog->expired())
            fail(HttpsError::Kind::timeout, target, "no complete answer within " + in_ms(limits.total_timeout));
        const long verify = SSL_get_verify_result(tls->native_handle());
        if (verify != X509_V_OK)
            fail(HttpsError::Kind::tls, target,
                 std::string("the certificate did not verify against upstream.ca_file: ") +
                     X509_verify_cert_error_string(verify));
        fail(HttpsError::Kind::tls, target, "the TLS handshake failed: " + handshake_error.message());
    }

    {
        Request message = build_request(request, target);
        auto [write_error, written] = co_await http::async_write(*tls, message, use_tuple);
        if (write_error) {
            if (watchdog->expired())
                fail(HttpsError::Kind::timeout, target, "no complete answer within " + in_ms(limits.total_timeout));
            fail(HttpsError::Kind::protocol, target, "sending the request failed: " + write_error.message());
        }
    }
    co_return co_await read_response(*tls, *watchdog, request, limits, target);
}

}  // namespace vaultgate::net
