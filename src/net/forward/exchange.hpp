#pragma once
// The forward step of the pipeline for an HTTP/1.1 client (pipeline.hpp),
// shared by the MITM path (TLS on both sides) and plain http:// forwarding (TCP
// on both sides): send the re-serialised head and the body, read the response
// head, rewrite its framing for the client, and stream the body back. The
// request was decided and `wire` built before; this part only moves bytes, and
// a failure becomes the result's refusal, which the pipeline answers.
#include "net/io/http_io.hpp"
#include "net/io/splice.hpp"
#include "vaultgate/config/config.hpp"
#include "vaultgate/credentials/redact.hpp"
#include "vaultgate/http/message.hpp"
#include "vaultgate/state/request_plan.hpp"
#include "vaultgate/state/sigv4_step.hpp"
#include "vaultgate/util/secret.hpp"
#include "vaultgate/util/wiped_bytes.hpp"

#include <functional>
#include <optional>
#include <string>

namespace vaultgate::net {

// Sends payload pieces to a stream, re-framed as chunks when `chunked`.
// A head set in `head` goes out with the first piece, in the same write: one
// TLS record and one system call instead of two for a small response. Pieces
// are framed in `frame`, the connection's write buffer, which keeps its size
// from one request to the next (the connection frees it when it idles).
template <class Stream>
struct BodyWriter {
    Stream* stream;
    Watchdog* watchdog;
    clock::duration timeout;
    bool chunked;
    std::string* frame;
    std::string head;  // not sent yet

    awaitable<error_code> operator()(std::string_view payload) {
        if (payload.empty()) co_return error_code{};
        if (!chunked && head.empty()) co_return co_await write_all(*stream, payload, *watchdog, timeout);
        take_head();
        if (chunked)
            append_chunk(*frame, payload);
        else
            frame->append(payload);
        co_return co_await write_all(*stream, *frame, *watchdog, timeout);
    }

    // Sends the head now, if it is still due.
    awaitable<error_code> send_head() {
        if (head.empty()) co_return error_code{};
        take_head();
        co_return co_await write_all(*stream, *frame, *watchdog, timeout);
    }

    // Sends what is still due at the end of the body: the head, if no body
    // piece carried it, and the last chunk of a chunked body (`last`: with
    // a trailer section).
    awaitable<error_code> finish(std::string_view last = last_chunk) {
        take_head();
        if (chunked) frame->append(last);
        if (frame->empty()) co_return error_code{};
        co_return co_await write_all(*stream, *frame, *watchdog, timeout);
    }

private:
    // The frame starts with the head, if it is still due.
    void take_head() {
        frame->assign(head);
        head.clear();
    }
};

// Informational (1xx) responses the origin may send before its final one: past
// this, an origin that never stops sending them is cut off with a 502.
inline constexpr int max_informational_responses = 32;

// Whether the response's content coding is unambiguously identity: no
// Content-Encoding field, or exactly one holding only "identity" (any case).
// Several fields or a list are refused, whatever they name: a client may
// decode them in another order or not at all.
bool content_coding_is_identity(const ResponseHead& head);

// The head as the client gets it. With a redactor, the secret is first
// replaced in the reason phrase and in every field name and value (a field
// whose name is no token once redacted is dropped); nullopt when the
// serialised head still holds it (a copy that spans a field boundary).
std::optional<std::string> serialize_for_client(ResponseHead& head, const Redactor* redactor);

// How a response body with framing `rf` goes to an HTTP/1.1 client: as it
// came, re-chunked (its length unknown, or changed by redaction), or
// delimited by closing the connection (an HTTP/1.0 client).
struct H1ClientShape {
    bool keep_length = false;  // Content-Length stays
    bool rechunk = false;      // Transfer-Encoding: chunked
    bool close_after = false;  // Connection: close, and the connection ends
};
H1ClientShape shape_for_h1_client(const BodyFraming& rf, const RequestPlan& req, bool redacting, bool draining);

// The response head for an HTTP/1.1 client, shaped so: hop-by-hop fields,
// those Connection lists and Content-Length dropped, framing set anew.
ResponseHead head_for_h1_client(ResponseHead&& resp, const BodyFraming& rf, const H1ClientShape& shape);

// A response head that still holds the credential after redaction.
inline Refusal unredactable_response() {
    return refusal(502, "unredactable_response",
                   "the origin's response head holds the credential in a form that cannot be redacted");
}

// A compressed body cannot be scanned; refusing beats passing it unscanned.
inline Refusal compressed_response_refusal() {
    return refusal(502, "compressed_response_refused", "the origin sent a compressed response to a redacted service");
}

// The 1xx head to pass to the client: hop-by-hop fields removed, redacted.
// nullopt when it goes nowhere: a 100 (vaultgate answers Expect itself), an
// HTTP/1.0 client (it expects no 1xx, RFC 9110 section 15.2), or a head that
// redaction cannot clean (it is informational only, so dropping it is safe).
std::optional<std::string> informational_for_client(ResponseHead& info, int client_version_minor,
                                                    const Redactor* redactor);

// The fields of a trailer section as the client gets them: only those
// allowed_in_trailers (h2_fields.hpp), redacted as a head is; a field that
// still holds the secret is dropped.
std::vector<Header> trailers_for_client(std::vector<Header>&& fields, const Redactor* redactor);

// The last chunk of a chunked body with `trailers` as its trailer section.
std::string last_chunk_with(const std::vector<Header>& trailers);

// Overwrites the head's values and target once serialised: they may hold the secret.
void wipe_head(RequestHead& head);

// Passes each body piece through the redactor before the writer (a
// BodyWriter, or an HTTP/2 stream's sink); holds back at most the redactor's
// window, so a secret split across reads or frames is still caught.
template <class Writer>
struct RedactingWriter {
    Writer* writer;
    Redactor* redactor;
    std::string scratch;

    awaitable<error_code> operator()(std::string_view payload) {
        scratch.clear();
        redactor->feed(payload, scratch);
        co_return co_await (*writer)(scratch);
    }
    awaitable<error_code> finish() {
        scratch.clear();
        redactor->finish(scratch);
        co_return co_await (*writer)(scratch);
    }
};

struct ExchangeResult {
    int status = 0;           // what the client got from the origin; 0 = nothing
    std::string_view reason;  // log reason when the exchange broke off, empty on success
    Refusal refusal;          // set: the exchange failed and the client is still owed this reply
    std::uint64_t bytes_up = 0;
    std::uint64_t bytes_down = 0;
    bool keep_client = false;     // the client connection can take another request
    bool keep_upstream = false;   // the upstream connection can be reused
    double upstream_seconds = 0;  // request sent -> response head received
};

// The two streams and their buffers, plus how to (re)connect the upstream.
// `connect(reused, result)` makes sure an upstream is open; when it cannot, it
// sets result.refusal and returns false.
template <class Client, class Upstream>
struct ExchangeIo {
    Client& client;
    ReadBuffer& client_buf;
    std::optional<Upstream>& upstream;
    ReadBuffer& upstream_buf;
    Watchdog& watchdog;
    const Limits& limits;
    std::function<awaitable<bool>(bool& reused, ExchangeResult& result)> connect;
    std::function<void()> drop_upstream;
    std::string& write_buffer;  // the client connection's, for BodyWriter
};

// The one ending of an exchange that fails with the upstream in an unknown
// state: the upstream is closed and the client is owed the refusal.
template <class Client, class Upstream>
void fail_exchange(ExchangeIo<Client, Upstream>& io, ExchangeResult& result, Refusal refusal) {
    io.drop_upstream();
    result.refusal = std::move(refusal);
}

// A chunked body that is already malformed in what arrived with the head is
// refused before anything is sent (or dialled): the origin then sees no bytes at all.
inline Refusal broken_chunked_body(const ReadBuffer& client_buf, const RequestPlan& req) {
    if (req.framing.kind != BodyKind::chunked || client_buf.empty()) return {};
    ChunkedDecoder probe;
    std::string scratch;
    if (probe.feed(client_buf.view(), scratch).status != ChunkedDecoder::Status::error) return {};
    return refusal(400, "bad_chunked_body", std::string(probe.error()));
}

// Sends the request's head, re-serialised (the head and its text are wiped
// once sent: they may hold the secret), and its body.
template <class Client, class Upstream>
awaitable<bool> send_request(ExchangeIo<Client, Upstream>& io, RequestPlan& req, ExchangeResult& result) {
    std::string wire = serialize_request_head(req.outgoing);
    wipe_head(req.outgoing);
    bool has_body = req.framing.kind != BodyKind::none;
    if (Refusal broken = broken_chunked_body(io.client_buf, req)) {
        wipe_string(wire);
        result.refusal = std::move(broken);
        co_return false;
    }

    bool reused = false;
    error_code write_error;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!co_await io.connect(reused, result)) {
            wipe_string(wire);
            co_return false;
        }
        write_error = co_await write_all(*io.upstream, wire, io.watchdog, io.limits.idle_timeout);
        // A kept-alive connection the origin closed while idle fails on first
        // use; nothing was delivered, so one retry on a fresh connection is safe.
        if (write_error && reused) {
            io.drop_upstream();
            continue;
        }
        break;
    }
    wipe_string(wire);
    if (write_error) {
        fail_exchange(io, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
        co_return false;
    }
    if (!has_body) co_return true;
    if (req.buffered_body) {
        // Read whole before signing (aws-sigv4); the head says its length.
        result.bytes_up = req.buffered_body->size();
        if (co_await write_all(*io.upstream, *req.buffered_body, io.watchdog, io.limits.idle_timeout)) {
            fail_exchange(io, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
            co_return false;
        }
        co_return true;
    }

    if (req.expect_continue)
        co_await write_all(io.client, std::string_view("HTTP/1.1 100 Continue\r\n\r\n"), io.watchdog,
                           io.limits.idle_timeout);
    bool chunked = req.framing.kind == BodyKind::chunked;
    BodyWriter<Upstream> writer{&*io.upstream, &io.watchdog, io.limits.idle_timeout, chunked, &io.write_buffer, {}};
    // (An if, not a conditional expression: GCC 12 miscompiles co_await inside ?:.)
    BodyResult body;
    if (chunked)
        body = co_await read_chunked_body(io.client, io.client_buf, ChunkLimits{}, io.watchdog, io.limits.idle_timeout,
                                          std::ref(writer));
    else
        body = co_await read_fixed_body(io.client, io.client_buf, req.framing.length, io.watchdog,
                                        io.limits.idle_timeout, std::ref(writer));
    result.bytes_up = body.bytes;
    if (body.outcome != BodyOutcome::ok) {
        // Abort without the final chunk: the origin never sees a complete request.
        io.drop_upstream();
        if (body.outcome == BodyOutcome::invalid)
            result.refusal = refusal(400, "bad_chunked_body", std::move(body.error));
        else if (body.outcome == BodyOutcome::timed_out)
            result.refusal = refusal(408, "request_timeout", "the request body stalled");
        else {
            result.reason = "client_aborted";
        }
        co_return false;
    }
    if (chunked && co_await write_all(*io.upstream, last_chunk, io.watchdog, io.limits.idle_timeout)) {
        fail_exchange(io, result, refusal(502, "upstream_write_failed", "the origin closed the connection"));
        co_return false;
    }
    co_return true;
}

// A client whose body ended early (or that left): logged as client_aborted;
// the reply most likely goes nowhere.
inline Refusal body_cut_short() {
    return refusal(400, "incomplete_body", "the request body ended before its end", "client_aborted");
}

// Collects a request body into wiped memory, up to a limit.
struct BodyCollector {
    WipedBytes* out;
    std::size_t limit;
    bool over = false;

    awaitable<error_code> operator()(std::string_view piece) {
        if (piece.size() > limit - out->size()) {
            over = true;
            co_return asio::error::message_size;
        }
        out->append(piece.data(), piece.size());
        co_return error_code{};
    }
};

// Reads the client's body whole into `out` (wiped when it goes), for a
// request vaultgate hashes before sending anything (aws-sigv4): at most
// limits.sign_body_bytes, refused with 413 before any byte is read when the
// Content-Length says more. A broken, stalled or cut body is refused as the
// streaming path refuses it. Answers the client's 100-continue first.
template <class Client, class Upstream>
awaitable<Refusal> read_whole_body(ExchangeIo<Client, Upstream>& io, const RequestPlan& req, WipedBytes& out) {
    const std::size_t limit = io.limits.sign_body_bytes;
    if (req.framing.kind == BodyKind::content_length && req.framing.length > limit)
        co_return body_too_large_to_sign(limit);
    if (req.expect_continue && co_await write_all(io.client, std::string_view("HTTP/1.1 100 Continue\r\n\r\n"),
                                                  io.watchdog, io.limits.idle_timeout))
        co_return body_cut_short();
    if (req.framing.kind == BodyKind::content_length) out.reserve(static_cast<std::size_t>(req.framing.length));
    BodyCollector collector{&out, limit};
    BodyResult body;
    if (req.framing.kind == BodyKind::chunked)
        body = co_await read_chunked_body(io.client, io.client_buf, ChunkLimits{}, io.watchdog, io.limits.idle_timeout,
                                          std::ref(collector));
    else
        body = co_await read_fixed_body(io.client, io.client_buf, req.framing.length, io.watchdog,
                                        io.limits.idle_timeout, std::ref(collector));
    if (body.outcome == BodyOutcome::ok) co_return Refusal{};
    if (collector.over) co_return body_too_large_to_sign(limit);
    if (body.outcome == BodyOutcome::invalid) co_return refusal(400, "bad_chunked_body", std::move(body.error));
    if (body.outcome == BodyOutcome::timed_out) co_return refusal(408, "request_timeout", "the request body stalled");
    co_return body_cut_short();
}

template <class Client, class Upstream, class Sink>
awaitable<BodyResult> read_response_body(ExchangeIo<Client, Upstream>& io, const BodyFraming& rf, Sink sink) {
    if (rf.kind == BodyKind::content_length)
        co_return co_await read_fixed_body(*io.upstream, io.upstream_buf, rf.length, io.watchdog,
                                           io.limits.response_timeout, sink);
    if (rf.kind == BodyKind::chunked)
        co_return co_await read_chunked_body(*io.upstream, io.upstream_buf, ChunkLimits{}, io.watchdog,
                                             io.limits.response_timeout, sink);
    if (rf.kind == BodyKind::until_close)
        co_return co_await read_until_close(*io.upstream, io.upstream_buf, io.watchdog, io.limits.response_timeout,
                                            sink);
    co_return BodyResult{};
}

// Reads the origin's response and streams it to the client.
template <class Client, class Upstream>
awaitable<void> relay_response(ExchangeIo<Client, Upstream>& io, const RequestPlan& req, Redactor* redactor,
                               bool draining, ExchangeResult& result) {
    auto sent_at = clock::now();
    ResponseHead resp;
    int informational = 0;
    for (;;) {
        ParseResult parsed;
        auto outcome =
            co_await read_head(*io.upstream, io.upstream_buf, resp, parse_response_head, HeadLimits{}, io.watchdog,
                               {io.limits.response_timeout, io.limits.response_timeout}, parsed);
        if (outcome != HeadOutcome::ok) {
            if (outcome == HeadOutcome::timed_out)
                fail_exchange(io, result, refusal(504, "upstream_timeout", "the origin did not answer in time"));
            else
                fail_exchange(io, result,
                              refusal(502, "bad_upstream_response", "the origin sent no valid HTTP response"));
            co_return;
        }
        if (resp.status >= 100 && resp.status < 200 && resp.status != 101) {
            if (++informational > max_informational_responses) {
                fail_exchange(
                    io, result,
                    refusal(502, "bad_upstream_response", "the origin sent too many informational (1xx) responses",
                            "too_many_informational_responses"));
                co_return;
            }
            if (auto info = informational_for_client(resp, req.summary.version_minor, redactor))
                co_await write_all(io.client, *info, io.watchdog, io.limits.idle_timeout);
            resp = ResponseHead{};
            continue;
        }
        break;
    }
    result.upstream_seconds = std::chrono::duration<double>(clock::now() - sent_at).count();
    auto resp_tokens = connection_tokens(resp.headers);

    if (resp.status == 101) {
        if (!req.websocket) {
            fail_exchange(io, result,
                          refusal(502, "bad_upstream_response", "unexpected protocol switch", "unexpected_101"));
            co_return;
        }
        ResponseHead out = resp;
        std::erase_if(out.headers,
                      [&](const Header& h) { return is_hop_by_hop(h.name) || listed_in(resp_tokens, h.name); });
        out.headers.push_back({"Connection", "Upgrade"});
        if (auto u = resp.get("upgrade")) out.headers.push_back({"Upgrade", std::string(*u)});
        result.status = 101;
        if (co_await write_all(io.client, serialize_response_head(out), io.watchdog, io.limits.idle_timeout)) co_return;
        // Bytes already buffered on either side go first, then the streams are spliced.
        SpliceCounters counters;
        if (!io.upstream_buf.empty()) {
            counters.down += io.upstream_buf.size();
            co_await write_all(io.client, io.upstream_buf.view(), io.watchdog, io.limits.idle_timeout);
        }
        if (!io.client_buf.empty()) {
            counters.up += io.client_buf.size();
            co_await write_all(*io.upstream, io.client_buf.view(), io.watchdog, io.limits.idle_timeout);
        }
        co_await splice(io.client, *io.upstream, io.watchdog, io.limits.idle_timeout, counters, 16384);
        result.bytes_up += counters.up;
        result.bytes_down = counters.down;
        io.drop_upstream();
        co_return;
    }

    auto rframing = response_framing(resp, req.summary.method);
    if (!rframing.framing) {
        fail_exchange(
            io, result,
            refusal(502, "bad_upstream_response", "the origin's response framing is invalid", "bad_upstream_framing"));
        co_return;
    }
    const auto& rf = *rframing.framing;
    if (redactor) {
        // A compressed body cannot be scanned; refusing beats passing it unscanned.
        if (!content_coding_is_identity(resp)) {
            fail_exchange(io, result, compressed_response_refusal());
            co_return;
        }
    }
    bool upstream_close = rf.kind == BodyKind::until_close || wants_close(resp.headers, resp.version_minor);
    const H1ClientShape shape = shape_for_h1_client(rf, req, redactor != nullptr, draining);
    ResponseHead out = head_for_h1_client(std::move(resp), rf, shape);
    auto head_text = serialize_for_client(out, redactor);
    if (!head_text) {
        fail_exchange(io, result, unredactable_response());
        co_return;
    }
    result.status = out.status;

    BodyWriter<Client> to_client{&io.client,    &io.watchdog,     io.limits.idle_timeout,
                                 shape.rechunk, &io.write_buffer, std::move(*head_text)};
    // The head waits for the body only when body bytes are already here (or
    // there is no body): a stream (SSE) whose first event comes later must not
    // keep its head from the client meanwhile. Nor may redaction, which holds
    // back the first bytes of a body.
    const bool body_is_here = !io.upstream_buf.empty() || rf.kind == BodyKind::none ||
                              (rf.kind == BodyKind::content_length && rf.length == 0);
    if ((!body_is_here || redactor) && co_await to_client.send_head()) {
        io.drop_upstream();
        result.reason = "client_gone";
        co_return;
    }
    BodyResult body;
    if (redactor) {
        RedactingWriter<BodyWriter<Client>> redacting{&to_client, redactor, {}};
        body = co_await read_response_body(io, rf, std::ref(redacting));
        if (body.outcome == BodyOutcome::ok && co_await redacting.finish()) body.outcome = BodyOutcome::sink_error;
    } else {
        body = co_await read_response_body(io, rf, std::ref(to_client));
    }
    result.bytes_down = body.bytes;
    if (body.outcome == BodyOutcome::ok && co_await to_client.finish()) body.outcome = BodyOutcome::sink_error;
    if (body.outcome != BodyOutcome::ok) {
        // The client has a partial response (or none); closing is the only honest signal left.
        io.drop_upstream();
        result.reason = body.outcome == BodyOutcome::sink_error ? "client_gone" : "response_truncated";
        co_return;
    }
    if (upstream_close) io.drop_upstream();
    result.keep_upstream = !upstream_close;
    result.keep_client = !shape.close_after;
}

}  // namespace vaultgate::net
