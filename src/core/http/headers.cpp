// Header-list helpers shared by request and response heads.
#include "vaultgate/http/message.hpp"

#include <algorithm>

namespace vaultgate {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        unsigned char x = static_cast<unsigned char>(a[i]);
        unsigned char y = static_cast<unsigned char>(b[i]);
        if (x >= 'A' && x <= 'Z') x = static_cast<unsigned char>(x + 32);
        if (y >= 'A' && y <= 'Z') y = static_cast<unsigned char>(y + 32);
        if (x != y) return false;
    }
    return true;
}

namespace {

std::optional<std::string_view> first_value(const std::vector<Header>& headers, std::string_view name) {
    for (const auto& h : headers)
        if (iequals(h.name, name)) return std::string_view(h.value);
    return std::nullopt;
}

std::size_t count_of(const std::vector<Header>& headers, std::string_view name) {
    return static_cast<std::size_t>(
        std::count_if(headers.begin(), headers.end(), [&](const Header& h) { return iequals(h.name, name); }));
}

void remove_all(std::vector<Header>& headers, std::string_view name) {
    std::erase_if(headers, [&](const Header& h) { return iequals(h.name, name); });
}

}  // namespace

std::optional<std::string_view> RequestHead::get(std::string_view name) const { return first_value(headers, name); }
std::size_t RequestHead::count(std::string_view name) const { return count_of(headers, name); }
void RequestHead::remove(std::string_view name) { remove_all(headers, name); }
void RequestHead::set(std::string_view name, std::string value) {
    remove_all(headers, name);
    headers.push_back({std::string(name), std::move(value)});
}

std::optional<std::string_view> ResponseHead::get(std::string_view name) const { return first_value(headers, name); }
std::size_t ResponseHead::count(std::string_view name) const { return count_of(headers, name); }
void ResponseHead::remove(std::string_view name) { remove_all(headers, name); }
void ResponseHead::set(std::string_view name, std::string value) {
    remove_all(headers, name);
    headers.push_back({std::string(name), std::move(value)});
}

}  // namespace vaultgate
