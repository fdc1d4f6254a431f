// Region and service from an AWS endpoint host, as AWS's endpoint rules name
// them. The credential scope is date/REGION/SERVICE: a host read the wrong way
// round signs with the two swapped, which AWS answers with a 403 that names
// neither, so every form here is read from the right, where the suffix fixes
// the meaning of each label.
#include "vaultgate/signing/sigv4.hpp"

#include "text.hpp"

#include <array>
#include <utility>

namespace vaultgate::sigv4 {

namespace {

using Labels = std::vector<std::string_view>;

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

bool all_letters(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < 'a' || c > 'z') return false;
    return true;
}

bool is_scope_element(std::string_view s) {
    if (s.empty() || s.size() > 64) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return true;
}

// us-east-1, eu-central-2, us-gov-west-1, cn-north-1, us-iso-east-1: two
// letters, one or more words, a number.
bool is_region(std::string_view s) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t dash = s.find('-', start);
        parts.push_back(s.substr(start, dash == std::string_view::npos ? dash : dash - start));
        if (dash == std::string_view::npos) break;
        start = dash + 1;
    }
    if (parts.size() < 3 || parts.front().size() != 2 || !all_letters(parts.front())) return false;
    if (!all_digits(parts.back()) || parts.back().size() > 2) return false;
    for (std::size_t i = 1; i + 1 < parts.size(); ++i)
        if (!all_letters(parts[i])) return false;
    return true;
}

Labels split_labels(std::string_view host) {
    Labels labels;
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = host.find('.', start);
        labels.push_back(host.substr(start, dot == std::string_view::npos ? dot : dot - start));
        if (dot == std::string_view::npos) return labels;
        start = dot + 1;
    }
}

bool ends_with_labels(const Labels& labels, std::initializer_list<std::string_view> suffix) {
    if (labels.size() < suffix.size()) return false;
    std::size_t i = labels.size() - suffix.size();
    for (std::string_view s : suffix)
        if (labels[i++] != s) return false;
    return true;
}

std::string_view without_fips(std::string_view label) {
    if (label.ends_with("-fips")) label.remove_suffix(5);
    return label;
}

// Endpoint prefixes whose signing name differs from the prefix.
std::string signing_name(std::string_view endpoint_prefix) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> renamed = {{
        {"bedrock-runtime", "bedrock"},
        {"bedrock-agent-runtime", "bedrock"},
        {"bedrock-agent", "bedrock"},
        {"bedrock-data-automation-runtime", "bedrock"},
        {"bedrock-data-automation", "bedrock"},
        {"email", "ses"},
    }};
    for (const auto& [prefix, name] : renamed)
        if (endpoint_prefix == prefix) return std::string(name);
    return std::string(endpoint_prefix);
}

// S3's own labels: s3, s3-fips, the access point and control forms, and the
// legacy dash forms s3-external-1 and s3-REGION.
std::optional<std::string> s3_label_region(std::string_view label) {
    if (label == "s3" || label == "s3-fips" || label == "s3-accesspoint" || label == "s3-accesspoint-fips" ||
        label == "s3-control" || label == "s3-control-fips")
        return std::string();
    if (label == "s3-external-1") return std::string("us-east-1");
    if (label.starts_with("s3-") && is_region(label.substr(3))) return std::string(label.substr(3));
    return std::nullopt;
}

// [bucket.]S3LABEL[.dualstack][.REGION]: the rightmost S3 label followed
// only by those, so a bucket named "s3.example" does not confuse it.
std::optional<Scope> s3_scope(const Labels& rest, bool china) {
    for (std::size_t i = rest.size(); i-- > 0;) {
        const std::optional<std::string> legacy_region = s3_label_region(rest[i]);
        if (!legacy_region) continue;
        std::string region = *legacy_region;
        for (std::size_t k = i + 1; k < rest.size(); ++k) {
            if (rest[k] == "dualstack") continue;
            if (!is_region(rest[k]) || k + 1 != rest.size() || !region.empty()) return std::nullopt;
            region = rest[k];
        }
        if (region.empty() && !china) region = "us-east-1";  // s3.amazonaws.com is us-east-1
        return Scope{region, "s3"};
    }
    return std::nullopt;
}

Scope derived_scope(std::string_view host) {
    std::string name = lowered(host);
    // A port, then the root dot.
    if (const std::size_t colon = name.rfind(':');
        colon != std::string::npos && name.find(']') == std::string::npos && all_digits(name.substr(colon + 1)))
        name.resize(colon);
    if (!name.empty() && name.back() == '.') name.pop_back();

    Labels rest = split_labels(name);
    bool china = false;
    if (ends_with_labels(rest, {"amazonaws", "com", "cn"})) {
        china = true;
        rest.resize(rest.size() - 3);
    } else if (ends_with_labels(rest, {"amazonaws", "com"}) || ends_with_labels(rest, {"api", "aws"})) {
        rest.resize(rest.size() - 2);
    } else {
        return {};
    }
    if (!rest.empty() && rest.back() == "vpce") rest.pop_back();  // VPC interface endpoints
    if (rest.empty()) return {};

    if (const std::optional<Scope> s3 = s3_scope(rest, china)) return *s3;

    const std::size_t n = rest.size();
    if (is_region(rest[n - 1])) {
        // [prefix.]SERVICE[.fips|.dualstack].REGION
        for (std::size_t i = n - 1; i-- > 0;) {
            if (rest[i] == "fips" || rest[i] == "dualstack") continue;
            return Scope{std::string(rest[n - 1]), signing_name(without_fips(rest[i]))};
        }
        return Scope{std::string(rest[n - 1]), {}};
    }
    if (n >= 2 && is_region(rest[n - 2]))
        return Scope{std::string(rest[n - 2]), signing_name(rest[n - 1])};  // REGION.es
    // The global endpoints, whose region is us-east-1.
    static constexpr std::array<std::string_view, 4> global = {"sts", "iam", "route53", "cloudfront"};
    if (n == 1 && !china)
        for (std::string_view service : global)
            if (without_fips(rest[0]) == service) return Scope{"us-east-1", std::string(service)};
    return {};
}

}  // namespace

std::optional<Scope> derive_scope(std::string_view host, std::string_view region_override,
                                  std::string_view service_override, std::string* why) {
    auto fail = [&](const char* text) -> std::optional<Scope> {
        if (why) *why = text;
        return std::nullopt;
    };
    if (!region_override.empty() && !is_scope_element(region_override))
        return fail("the region is not a valid AWS region name (lower-case letters, digits and '-')");
    if (!service_override.empty() && !is_scope_element(service_override))
        return fail("the service is not a valid AWS service name (lower-case letters, digits and '-')");
    Scope scope = region_override.empty() || service_override.empty() ? derived_scope(host) : Scope{};
    if (!region_override.empty()) scope.region = region_override;
    if (!service_override.empty()) scope.service = service_override;
    if (scope.region.empty() && scope.service.empty())
        return fail("the host is not an AWS endpoint form that names a region and service; set region and service");
    if (scope.region.empty()) return fail("the host names no AWS region; set region");
    if (scope.service.empty()) return fail("the host names no AWS service; set service");
    return scope;
}

}  // namespace vaultgate::sigv4
