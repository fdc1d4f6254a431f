// Reading a token endpoint's answer. Every failure's reason is one of the fixed
// texts below (with at most the status code): the body may hold a token, or
// text an endpoint chose, and neither belongs in a log line.
#include "vaultgate/minting/token_response.hpp"

#include "wiped_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace vaultgate::minting {

namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

constexpr std::size_t max_token_size = 16384;
constexpr seconds default_oauth_lifetime{5 * 60};
constexpr seconds oauth_refresh_margin{60};
constexpr seconds github_refresh_margin{5 * 60};
constexpr auto longest_cache = std::chrono::duration_cast<seconds>(longest_token_cache);

TokenFailure failure(std::string reason) { return TokenFailure{std::move(reason)}; }

// The answer's JSON object and the token in its member `token_field`, or why
// the answer has none that a header can carry.
struct Answer {
    WipedJson object;
    Secret token;
};

std::variant<Answer, TokenFailure> read_answer(int status, int expected, const Secret& body,
                                               const std::string& token_field) {
    if (status != expected) return failure("token endpoint answered " + std::to_string(status));
    auto tree = parse_wiped_json(body);
    if (!tree) return failure("the token endpoint's answer is not JSON");
    if (!tree->is_object()) return failure("the token endpoint's answer is not a JSON object");
    const WipedString* token = string_member(*tree, token_field.c_str());
    if (!token) return failure("no " + token_field + " in the token endpoint's answer");
    if (!is_usable_token({token->data(), token->size()}))
        return failure("the " + token_field + " in the answer is empty, too long or holds bytes a header cannot carry");
    Secret value = to_secret(*token);
    return Answer{std::move(*tree), std::move(value)};
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// expires_in in whole seconds, capped at longest_cache; nullopt when it is not
// a positive number of seconds. Some endpoints send it as a string of digits.
std::optional<seconds> expires_in_seconds(const WipedJson& value) {
    if (value.is_number_unsigned())
        return seconds(std::min<std::uint64_t>(value.get<std::uint64_t>(), longest_cache.count()));
    if (value.is_number_integer()) return std::nullopt;  // negative: unsigned ones were taken above
    if (value.is_number_float()) {
        const double d = value.get<double>();
        if (!std::isfinite(d) || d < 1) return std::nullopt;
        return seconds(static_cast<std::int64_t>(std::min<double>(d, double(longest_cache.count()))));
    }
    if (value.is_string()) {
        const auto& text = value.get_ref<const WipedString&>();
        if (text.empty()) return std::nullopt;
        std::int64_t n = 0;
        for (const char c : text) {
            if (c < '0' || c > '9') return std::nullopt;
            n = std::min<std::int64_t>(n * 10 + (c - '0'), longest_cache.count());
        }
        return seconds(n);
    }
    return std::nullopt;
}

// "YYYY-MM-DDTHH:MM:SSZ" (GitHub's expires_at), or nullopt.
std::optional<system_clock::time_point> parse_utc_timestamp(std::string_view s) {
    constexpr std::string_view shape = "dddd-dd-ddTdd:dd:ddZ";
    if (s.size() != shape.size()) return std::nullopt;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool digit = s[i] >= '0' && s[i] <= '9';
        if (shape[i] == 'd' ? !digit : s[i] != shape[i]) return std::nullopt;
    }
    const auto number = [&](std::size_t at, std::size_t n) {
        int v = 0;
        for (std::size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
        return v;
    };
    const std::chrono::year_month_day date{std::chrono::year(number(0, 4)), std::chrono::month(number(5, 2)),
                                           std::chrono::day(number(8, 2))};
    const int hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
    if (!date.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;
    return std::chrono::sys_days(date) + std::chrono::hours(hour) + std::chrono::minutes(minute) + seconds(second);
}

}  // namespace

bool is_usable_token(std::string_view token) {
    return !token.empty() && token.size() <= max_token_size &&
           std::all_of(token.begin(), token.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

TokenResult parse_oauth_token_response(int status, const Secret& body, system_clock::time_point now) {
    auto answer = read_answer(status, 200, body, "access_token");
    if (auto* failed = std::get_if<TokenFailure>(&answer)) return std::move(*failed);
    auto& [object, token] = std::get<Answer>(answer);

    // Another type (mac, DPoP, N_A) would not be accepted as "Authorization: Bearer".
    if (const auto type = object.find("token_type"); type != object.end()) {
        if (!type->is_string() || !equals_ignoring_case(type->get_ref<const WipedString&>(), "bearer"))
            return failure("the answer's token_type is not bearer");
    }
    const auto expires = object.find("expires_in");
    if (expires == object.end() || expires->is_null())
        return MintedToken{std::move(token), now + default_oauth_lifetime};
    const auto lifetime = expires_in_seconds(*expires);
    if (!lifetime || lifetime->count() <= 0)
        return failure("the answer's expires_in is not a positive number of seconds");
    // Refreshed a little early (a tenth of a short life) so no request carries a token as it expires.
    const auto margin =
        std::min<system_clock::duration>(oauth_refresh_margin, std::chrono::milliseconds(lifetime->count() * 100));
    return MintedToken{std::move(token), now + *lifetime - margin};
}

TokenResult parse_github_token_response(int status, const Secret& body, system_clock::time_point now) {
    auto answer = read_answer(status, 201, body, "token");
    if (auto* failed = std::get_if<TokenFailure>(&answer)) return std::move(*failed);
    auto& [object, token] = std::get<Answer>(answer);

    const WipedString* expires_text = string_member(object, "expires_at");
    if (!expires_text) return failure("no expires_at in the token endpoint's answer");
    const auto expires_at = parse_utc_timestamp({expires_text->data(), expires_text->size()});
    if (!expires_at) return failure("the answer's expires_at is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");
    const auto refresh_at = *expires_at - github_refresh_margin;
    if (refresh_at <= now) return failure("the token expires within 5 minutes");
    return MintedToken{std::move(token), std::min(refresh_at, now + longest_cache)};
}

}  // namespace vaultgate::minting
