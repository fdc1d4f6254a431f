// Absolute-form http:// requests: forwarded in the clear when the session's
// policy allows plain HTTP to the host, never with a credential (a secret only
// travels over verified TLS). One request per client connection: the answer
// carries Connection: close, so a later request to another host starts fresh.
#include "net/proxy/connection.hpp"

#include "net/io/http_io.hpp"
#include "net/proxy/pipeline.hpp"
#include "net/upstream/dialer.hpp"

namespace vaultgate::net {

namespace {

// The pipeline's front (pipeline.hpp) for the one request of a plain
// connection: HTTP/1.1 over TCP on both sides.
class PlainFront {
public:
    PlainFront(ClientContext& ctx, tcp::socket& client, ReadBuffer& buf, std::shared_ptr<const GatewayState> state,
               Authority dest, std::string origin_form, clock::time_point start, std::optional<tcp::endpoint> required)
        : ctx_(ctx),
          client_(client),
          state_(std::move(state)),
          dest_(std::move(dest)),
          origin_form_(std::move(origin_form)),
          start_(start),
          required_(required),
          upstream_buf_(16384),
          io_{client,
              buf,
              upstream_,
              upstream_buf_,
              *ctx.watchdog,
              ctx.settings->limits,
              [this](bool& reused, ExchangeResult& r) { return connect(reused, r); },
              [this] { drop(); },
              write_buffer_} {}
    PlainFront(const PlainFront&) = delete;
    PlainFront& operator=(const PlainFront&) = delete;

    std::shared_ptr<const GatewayState> snapshot() { return state_; }
    Decision decide(const GatewayState& state, RequestHead&& req) {
        return decide_plain_request(state, *state.find_session(ctx_.session_id), dest_, std::move(origin_form_),
                                    std::move(req));
    }
    awaitable<void> send_refusal(const Refusal& refusal) { co_await send_http_refusal(ctx_, client_, refusal, dest_); }
    awaitable<Refusal> read_whole_body(const RequestPlan& plan, WipedBytes& body) {
        return net::read_whole_body(io_, plan, body);
    }
    awaitable<bool> send_request(RequestPlan& plan, ExchangeResult& result) {
        policy_ = &plan.session->policy;
        return net::send_request(io_, plan, result);
    }
    awaitable<void> relay_response(const RequestPlan& plan, Redactor* redactor, ExchangeResult& result) {
        return net::relay_response(io_, plan, redactor, true, result);
    }
    void forward_done(const ExchangeResult&) { drop(); }
    void log(const RequestLine& line) {
        // A destination refused by the policy or at the address check is a denial, like any other.
        record_request(ctx_, line.status == 403 ? "denied" : "http", dest_, start_, line);
    }

private:
    awaitable<bool> connect(bool& reused, ExchangeResult& result) {
        reused = upstream_.has_value();
        if (upstream_) co_return true;
        tcp::socket socket(client_.get_executor());
        auto dialed =
            co_await dial_checked(*ctx_.rt, *ctx_.settings, *policy_, dest_, socket, *ctx_.watchdog, required_);
        if (dialed.denied != DenyReason::none) {
            result.refusal = denial(dialed.denied, policy_);
            co_return false;
        }
        if (!dialed.ok()) {
            result.refusal = dial_failure(*ctx_.rt, dest_, dialed, "the destination");
            co_return false;
        }
        upstream_.emplace(std::move(socket));
        ctx_.watchdog->watch(*upstream_);
        co_return true;
    }

    void drop() {
        if (!upstream_) return;
        ctx_.watchdog->unwatch(*upstream_);
        error_code ignored;
        upstream_->close(ignored);
        upstream_.reset();
    }

    ClientContext& ctx_;
    tcp::socket& client_;
    std::shared_ptr<const GatewayState> state_;
    Authority dest_;
    std::string origin_form_;
    clock::time_point start_;
    std::optional<tcp::endpoint> required_;
    const EgressPolicy* policy_ = nullptr;
    std::optional<tcp::socket> upstream_;
    ReadBuffer upstream_buf_;
    std::string write_buffer_;  // one exchange per connection here
    ExchangeIo<tcp::socket, tcp::socket> io_;
};

}  // namespace

std::optional<Authority> first_request_destination(const RequestHead& req) {
    std::string_view authority_text = req.target;
    std::string origin_form;
    const bool connect = req.method == "CONNECT";
    if (!connect && !split_absolute_url(req.target, "http://", authority_text, origin_form)) return std::nullopt;
    auto parsed = parse_authority(authority_text, connect ? 0 : 80);
    if (!parsed) return std::nullopt;
    return *parsed.authority;
}

awaitable<void> handle_plain_http(ClientContext& ctx, tcp::socket& client, ReadBuffer& buf, RequestHead req,
                                  std::shared_ptr<const GatewayState> state, clock::time_point start,
                                  std::optional<tcp::endpoint> required) {
    std::string_view authority_text;
    std::string origin_form;
    if (!split_absolute_url(req.target, "http://", authority_text, origin_form)) {
        co_await answer_refusal(
            ctx, malformed_site(start),
            refusal(400, "not_a_proxy_request", "send CONNECT host:port, or an absolute-form http:// request",
                    "malformed_request"),
            HttpRefusalReply{ctx, client});
        co_return;
    }
    auto parsed = parse_authority(authority_text, 80);
    if (!parsed) {
        co_await answer_refusal(
            ctx, malformed_site(start),
            refusal(400, "bad_authority", std::string(host_error_text(parsed.error)), "malformed_request"),
            HttpRefusalReply{ctx, client});
        co_return;
    }
    PlainFront front(ctx, client, buf, std::move(state), *parsed.authority, std::move(origin_form), start, required);
    co_await serve_request(front, *ctx.rt, std::move(req));
    error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace vaultgate::net
