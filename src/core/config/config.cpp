// The config file: YAML in, a validated Config out. Every refusal is a
// ConfigError "file:line:col: key.path: what is wrong", and nothing that could
// be a credential is ever echoed back into a message. The YAML side is
// yaml_reader.hpp; each section has its own reader (config_sections.hpp).
#include "vaultgate/config/config.hpp"

#include "config_sections.hpp"
#include "vaultgate/config/yaml_reader.hpp"
#include "vaultgate/credentials/validation.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

namespace vaultgate {

namespace {

// A config file is a few kilobytes; a cap keeps a mistaken path (a log, a
// device) from being slurped whole.
constexpr std::size_t max_config_bytes = 1 << 20;

// The top level: a map of sections, each read by its own function.
Config read_config(const yaml::Value& root, const std::string& source) {
    Config cfg;
    cfg.source_path = source;
    // An empty file is more likely a truncated one (a failed write, a
    // reload mid-edit) than a wish for every default, which `{}` says.
    if (root.is_null())
        root.fail(
            "the config file is empty (nothing but whitespace, comments or null); "
            "write {} to take every default");
    if (!root.is_map()) root.fail("expected a map of sections at the top level, got " + root.kind());

    using namespace config_sections;
    const auto top = root.fields(
        {"listen", "ca", "upstream", "store", "admin", "log", "limits", "mitm", "vaults", "sessions", "egress_policies"});
    if (auto* e = top.find("listen")) read_listen(*e, cfg);
    if (auto* e = top.find("ca")) read_ca(*e, cfg);
    if (auto* e = top.find("upstream")) read_upstream(*e, cfg);
    if (auto* e = top.find("store")) read_store(*e, cfg);
    if (auto* e = top.find("admin")) read_admin(*e, cfg);
    if (auto* e = top.find("log")) read_log(*e, cfg);
    if (auto* e = top.find("limits")) read_limits(*e, cfg.limits);
    if (auto* e = top.find("mitm")) read_mitm(*e, cfg);
    // Policies and vaults before sessions, which refer to both.
    if (auto* e = top.find("vaults")) read_vaults(*e, cfg);
    if (auto* e = top.find("egress_policies")) read_egress_policies(*e, cfg);
    if (auto* e = top.find("sessions")) read_sessions(*e, cfg);
    return cfg;
}

}  // namespace

std::string ListenAddress::to_string() const {
    if (is_unix()) return "unix:" + unix_path;
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

bool ServiceConfig::matches(std::string_view normalised_host, std::uint16_t p) const {
    if (p != port) return false;
    if (!host.starts_with("*.")) return normalised_host == host;
    // "*.example.com" covers "a.example.com" and "a.b.example.com", never
    // "example.com" itself nor "badexample.com".
    const std::string_view suffix = std::string_view(host).substr(1);  // ".example.com"
    return normalised_host.size() > suffix.size() && normalised_host.ends_with(suffix);
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    // 12 digits times an hour still fits in the 64-bit count.
    if (digits == 0 || digits > 12) return std::nullopt;
    std::int64_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) value = value * 10 + (text[i] - '0');
    const auto unit = text.substr(digits);
    std::int64_t scale = 0;
    if (unit == "ms")
        scale = 1;
    else if (unit == "s")
        scale = 1000;
    else if (unit == "m")
        scale = 60 * 1000;
    else if (unit == "h")
        scale = 60 * 60 * 1000;
    else
        return std::nullopt;
    return std::chrono::milliseconds(value * scale);
}

Config parse_config(const std::string& yaml_text, const std::string& source_name) {
    const yaml::Reader reader(source_name);
    const auto root = reader.load(yaml_text);
    return reader.guard([&] {
        Config cfg = read_config(root, source_name);
        root.collect_positions(cfg.positions);
        return cfg;
    });
}

SourcePosition Config::position_of(std::string_view key_path) const {
    for (;;) {
        if (auto it = positions.find(key_path); it != positions.end()) return it->second;
        // Up one level: "a.b[2]" -> "a.b" -> "a".
        const auto cut = key_path.find_last_of(".[");
        if (cut == std::string_view::npos) return {};
        key_path = key_path.substr(0, cut);
    }
}

std::string Config::place_of(std::string_view key_path) const {
    const auto at = position_of(key_path);
    return source_path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

Config load_config_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
    std::string text;
    char buf[8192];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_config_bytes)
            throw ConfigError(path + ": config file is larger than " + std::to_string(max_config_bytes) + " bytes");
    }
    if (in.bad()) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
    return parse_config(text, path);
}

unsigned auto_worker_threads(unsigned cores) { return cores > 0 ? cores : 1; }

namespace config_sections {

void require_key_name(const yaml::Value& entry, std::string_view kind, const std::string& map_path) {
    const auto name = entry.key();
    if (auto why = validation::check_name(name, kind)) entry.fail_at_key(map_path, yaml::with_value(*why, name));
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
        if (!out.empty()) out += ", ";
        out += n;
    }
    return out;
}

}  // namespace config_sections

}  // namespace vaultgate
