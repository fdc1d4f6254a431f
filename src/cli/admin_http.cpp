// The admin client's HTTP transport: Boost.Beast over TCP or a unix socket,
// one connection per request, every step bounded by one deadline; Boost.URL
// reads the admin URL and builds request targets.
#include "cli/admin_client.hpp"
#include "vaultgate/util/wiping_allocator.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url.hpp>

#include <sys/un.h>

#include <chrono>

namespace vaultgate::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace urls = boost::urls;

AdminEndpoint parse_admin_url(const std::string& url) {
    AdminEndpoint ep;
    ep.url = url;
    if (url.rfind("unix:", 0) == 0) {
        // A file name, not a URL: taken as it is, spaces and all.
        ep.unix_socket = true;
        ep.socket_path = url.substr(5);
        if (ep.socket_path.empty()) throw UsageError("admin URL " + url + ": no socket path after unix:");
        if (ep.socket_path.size() >= sizeof(sockaddr_un::sun_path))
            throw UsageError("admin URL " + url + ": the socket path is too long");
        ep.host_header = "localhost";
        return ep;
    }
    if (url.rfind("http://", 0) != 0) throw UsageError("admin URL " + url + ": expected http://HOST:PORT or unix:PATH");
    auto parsed = urls::parse_uri(url);
    if (!parsed) throw UsageError("admin URL " + url + ": not a valid URL (" + parsed.error().message() + ")");
    if (parsed->has_userinfo()) throw UsageError("admin URL " + url + ": no user name or password goes in it");
    const auto path = parsed->encoded_path();
    if (path.find_first_not_of('/') != urls::string_view::npos || parsed->has_query() || parsed->has_fragment())
        throw UsageError("admin URL " + url + ": give the server's address only, without a path");
    ep.host = parsed->host_address();  // IPv6 without its brackets, for the resolver
    if (ep.host.empty()) throw UsageError("admin URL " + url + ": no host");
    const std::string port = parsed->port();
    ep.port = port.empty() ? 80 : static_cast<std::uint16_t>(parse_number(port, "admin URL port", 1, 65535));
    ep.host_header = parsed->encoded_authority();
    return ep;
}

std::string admin_target(std::initializer_list<std::string_view> segments, const AdminQuery& query) {
    // Only unreserved characters stay as they are: the admin API reads '+' in
    // a query as a space, so Boost.URL's default (which keeps '+') would not do.
    urls::url target;
    target.set_path_absolute(true);
    for (std::string_view segment : segments)
        target.encoded_segments().push_back(urls::pct_string_view(urls::encode(segment, urls::unreserved_chars)));
    for (const auto& [key, value] : query)
        target.encoded_params().append({urls::pct_string_view(urls::encode(key, urls::unreserved_chars)),
                                        urls::pct_string_view(urls::encode(value, urls::unreserved_chars))});
    return std::string(target.buffer());
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto request_timeout = std::chrono::seconds(30);
constexpr std::uint32_t max_head = 64 * 1024;
constexpr std::uint64_t max_body = 64 * 1024 * 1024;
constexpr auto as_tuple = asio::as_tuple(asio::use_awaitable);

// The body is sent from the caller's buffer, not copied: callers wipe theirs.
using RequestBody = http::span_body<const char>;
// Beast keeps each header field in memory of its own: the bearer token's copy
// is wiped when it is freed, however the request ends.
using Request = http::request<RequestBody, http::basic_fields<WipingAllocator<char>>>;

[[noreturn]] void fail(const AdminEndpoint& ep, const std::string& why) {
    throw std::runtime_error("admin API at " + ep.url + ": " + why);
}

[[noreturn]] void cannot_connect(const AdminEndpoint& ep, const std::string& why) {
    throw std::runtime_error("cannot connect to the admin API at " + ep.url + ": " + why);
}

std::string describe(const beast::error_code& ec) {
    return ec == beast::error::timeout ? "no answer within 30 s" : ec.message();
}

[[noreturn]] void read_failed(const AdminEndpoint& ep, const beast::error_code& ec) {
    if (ec == http::error::body_limit) fail(ep, "the response body is larger than 64 MiB");
    if (ec == http::error::header_limit) fail(ep, "the response head is larger than 64 KiB");
    if (ec == http::error::end_of_stream) fail(ep, "the connection closed before a response");
    if (ec == http::error::partial_message) fail(ep, "the connection closed in the middle of the response");
    if (ec.category() == http::make_error_code(http::error::bad_version).category())
        fail(ep, "the answer is not HTTP/1.x (" + ec.message() + ")");
    fail(ep, "reading the response failed: " + describe(ec));
}

Request build_request(std::string_view method, std::string_view target, std::string_view body, const AdminEndpoint& ep,
                      const std::optional<Secret>& token) {
    Request request;
    request.method_string(method);
    request.target(target);
    request.version(11);
    request.set(http::field::host, ep.host_header);
    request.set(http::field::user_agent, "vaultgate/" VAULTGATE_VERSION);
    request.set(http::field::accept, "application/json");
    if (token) {
        std::string value;
        ScopedWipe wipe_value(value);
        value.reserve(7 + token->size());
        value.append("Bearer ").append(token->reveal());
        request.set(http::field::authorization, value);
    }
    if (!body.empty()) request.set(http::field::content_type, "application/json");
    if (!body.empty() || method != "GET") request.content_length(body.size());
    request.set(http::field::connection, "close");
    request.body() = RequestBody::value_type(body.data(), body.size());
    return request;
}

template <class Stream>
asio::awaitable<AdminResponse> read_response(Stream& stream, beast::flat_buffer& buffer, bool head,
                                             Clock::time_point deadline, const AdminEndpoint& ep) {
    for (;;) {
        http::response_parser<http::string_body> parser;
        parser.header_limit(max_head);
        parser.body_limit(max_body);
        if (head) parser.skip(true);
        stream.expires_at(deadline);
        auto [ec, n] = co_await http::async_read(stream, buffer, parser, as_tuple);
        if (ec) read_failed(ep, ec);
        auto& message = parser.get();
        // An interim answer (100 Continue) is followed by the real one.
        if (message.result_int() < 200 && message.result_int() != 101) continue;
        AdminResponse response;
        response.status = static_cast<int>(message.result_int());
        response.reason = std::string(message.reason());
        response.body = std::move(message.body());
        co_return response;
    }
}

template <class Stream>
asio::awaitable<AdminResponse> exchange(Stream& stream, Request& request, Clock::time_point deadline,
                                        const AdminEndpoint& ep) {
    const bool head = request.method() == http::verb::head;
    beast::flat_buffer buffer;
    stream.expires_at(deadline);
    auto [ec, n] = co_await http::async_write(stream, request, as_tuple);
    // The head went out (or never will): its token goes now, wiped as it is freed.
    request.erase(http::field::authorization);
    if (ec) {
        // A server may refuse early (401, 413) and close before reading the
        // body; its answer says more than the broken pipe does.
        try {
            co_return co_await read_response(stream, buffer, head, deadline, ep);
        } catch (const std::runtime_error&) {}
        fail(ep, "sending the request failed: " + describe(ec));
    }
    co_return co_await read_response(stream, buffer, head, deadline, ep);
}

asio::awaitable<AdminResponse> over_tcp(const AdminEndpoint& ep, Request& request, Clock::time_point deadline) {
    auto executor = co_await asio::this_coro::executor;
    asio::ip::tcp::resolver resolver(executor);
    auto [resolve_error, found] = co_await resolver.async_resolve(ep.host, std::to_string(ep.port),
                                                                  asio::ip::resolver_base::numeric_service, as_tuple);
    if (resolve_error) cannot_connect(ep, resolve_error.message());
    beast::tcp_stream stream(executor);
    stream.expires_at(deadline);
    auto [connect_error, peer] = co_await stream.async_connect(found, as_tuple);
    if (connect_error) cannot_connect(ep, describe(connect_error));
    co_return co_await exchange(stream, request, deadline, ep);
}

asio::awaitable<AdminResponse> over_unix(const AdminEndpoint& ep, Request& request, Clock::time_point deadline) {
    beast::basic_stream<asio::local::stream_protocol> stream(co_await asio::this_coro::executor);
    stream.expires_at(deadline);
    auto [connect_error] =
        co_await stream.async_connect(asio::local::stream_protocol::endpoint(ep.socket_path), as_tuple);
    if (connect_error) cannot_connect(ep, describe(connect_error));
    co_return co_await exchange(stream, request, deadline, ep);
}

}  // namespace

AdminClient::AdminClient(AdminEndpoint endpoint, std::optional<Secret> token)
    : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

AdminResponse AdminClient::request(std::string_view method, std::string_view target, std::string_view body) const {
    const auto deadline = Clock::now() + request_timeout;
    Request request = build_request(method, target, body, endpoint_, token_);
    asio::io_context io;
    std::optional<AdminResponse> response;
    std::exception_ptr error;
    asio::co_spawn(
        io, endpoint_.unix_socket ? over_unix(endpoint_, request, deadline) : over_tcp(endpoint_, request, deadline),
        [&](std::exception_ptr e, AdminResponse r) {
            if (e)
                error = e;
            else
                response = std::move(r);
        });
    // The stream's deadline bounds connecting, sending and reading; this one
    // bounds the name lookup too.
    io.run_until(deadline);
    if (error) std::rethrow_exception(error);
    if (!response) fail(endpoint_, "no answer within 30 s");
    return std::move(*response);
}

}  // namespace vaultgate::cli
