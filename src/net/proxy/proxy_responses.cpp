#include "net/proxy/proxy_responses.hpp"

#include <nlohmann/json.hpp>

namespace vaultgate::net {

std::string_view status_text(int status) {
    switch (status) {
        case 100:
            return "Continue";
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 407:
            return "Proxy Authentication Required";
        case 408:
            return "Request Timeout";
        case 413:
            return "Content Too Large";
        case 414:
            return "URI Too Long";
        case 417:
            return "Expectation Failed";
        case 421:
            return "Misdirected Request";
        case 431:
            return "Request Header Fields Too Large";
        case 501:
            return "Not Implemented";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Error";
    }
}

namespace {

std::string build(int status, std::string_view extra_headers, const std::string& body, bool close) {
    std::string out;
    out.reserve(160 + extra_headers.size() + body.size());
    out.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(status_text(status));
    out.append("\r\nContent-Type: application/json\r\nContent-Length: ").append(std::to_string(body.size()));
    out.append("\r\nCache-Control: no-store\r\n");
    if (close) out.append("Connection: close\r\n");
    out.append(extra_headers);
    out.append("\r\n").append(body);
    return out;
}

}  // namespace

std::string error_response(int status, std::string_view code, std::string_view message, bool close,
                           std::string_view reason) {
    nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
    std::string headers;
    if (!reason.empty()) headers.append("X-Vaultgate-Reason: ").append(reason).append("\r\n");
    return build(status, headers, body.dump() + "\n", close);
}

std::string denied_response(DenyReason reason, const Authority& dest, std::string_view policy) {
    auto name = std::string(deny_reason_name(reason));
    nlohmann::ordered_json body = {
        {"error", "egress_denied"}, {"reason", name}, {"destination", format_authority(dest)}};
    if (!policy.empty()) {
        body["policy"] = policy;
        if (auto rule = deny_rule(reason); !rule.empty()) body["rule"] = rule;
    }
    body["message"] = named_deny_advice(reason, dest, policy);
    std::string headers = "X-Vaultgate-Reason: " + name + "\r\n";
    return build(403, headers, body.dump() + "\n", true);
}

std::string proxy_auth_required_response(std::string_view message) {
    nlohmann::json body = {{"error", {{"code", "proxy_auth_required"}, {"message", message}}}};
    return build(407, "Proxy-Authenticate: Basic realm=\"vaultgate\"\r\n", body.dump() + "\n", true);
}

std::string refusal_response(const Refusal& refusal, const Authority& dest) {
    switch (refusal.form) {
        case Refusal::Form::denied:
            return denied_response(refusal.deny, dest, refusal.policy);
        case Refusal::Form::proxy_auth:
            return proxy_auth_required_response(refusal.message);
        case Refusal::Form::error:
            break;
    }
    return error_response(refusal.status, refusal.code, refusal.message, refusal.close,
                          refusal.reason_header ? refusal.reason : std::string_view());
}

}  // namespace vaultgate::net
