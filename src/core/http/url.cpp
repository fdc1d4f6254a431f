// Absolute-form URLs, as a proxy request target or as `vaultgate explain` takes them.
#include "vaultgate/http/message.hpp"

namespace vaultgate {

bool split_absolute_url(std::string_view url, std::string_view scheme, std::string_view& authority,
                        std::string& origin_form) {
    if (url.size() <= scheme.size() || !iequals(url.substr(0, scheme.size()), scheme)) return false;
    auto rest = url.substr(scheme.size());
    auto end = rest.find_first_of("/?#");
    authority = rest.substr(0, end);
    if (end == std::string_view::npos)
        origin_form = "/";
    else if (rest[end] == '/')
        origin_form = std::string(rest.substr(end));
    else if (rest[end] == '?')
        origin_form = "/" + std::string(rest.substr(end));
    else
        origin_form = "/";  // a fragment is not sent
    if (auto hash = origin_form.find('#'); hash != std::string::npos) origin_form.resize(hash);
    return authority.find('@') == std::string_view::npos;
}

}  // namespace vaultgate
