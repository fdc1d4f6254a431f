#include "cli/option_hint.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string_view>
#include <vector>

namespace vaultgate::cli {

namespace {

const CLI::App* deepest_chosen(const CLI::App& root) {
    const CLI::App* app = &root;
    while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
    return app;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// The known word closest to `typed`, if it is close enough to be a typo.
std::string closest(std::string_view typed, const std::vector<std::string>& known) {
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(2, typed.size() / 3) + 1;
    for (const auto& word : known) {
        const std::size_t d = edit_distance(typed, word);
        if (d < best_distance) {
            best_distance = d;
            best = word;
        }
    }
    return best;
}

// "--frobnicate", "serv": letters, digits and dashes, short.
bool looks_like_a_name(std::string_view word) {
    if (word.empty() || word.size() > 32) return false;
    return std::all_of(word.begin(), word.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; });
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* option : app.get_options())
        for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    return names;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
    return names;
}

}  // namespace

std::string chosen_command_path(const CLI::App& root) {
    std::string path = root.get_name();
    for (const CLI::App* app = &root; !app->get_subcommands().empty();) {
        app = app->get_subcommands().front();
        path += " " + app->get_name();
    }
    return path;
}

int report_parse_error(const CLI::App& root, const CLI::ParseError& error) {
    const CLI::App* app = deepest_chosen(root);
    const std::string command = chosen_command_path(root);
    std::string message = error.what();
    std::string hint;
    const std::vector<std::string> unknown = app->remaining();
    if (!unknown.empty()) {
        // An unknown word is reported before a missing option. Only a name is
        // quoted back, never a value: a secret may have been typed there.
        const std::string& first = unknown.front();
        const bool is_option = first.rfind("-", 0) == 0;
        const std::string word = is_option ? first.substr(0, first.find('=')) : first;
        const auto known = is_option ? option_names(*app) : subcommand_names(*app);
        const std::string guess = closest(word, known);
        const std::string shown = looks_like_a_name(word) ? " '" + word + "'" : "";
        message = (is_option ? "unknown option" : known.empty() ? "unexpected argument" : "unknown command") + shown;
        if (!guess.empty()) hint = "did you mean '" + guess + "'? ";
    } else if (app == &root) {
        std::fprintf(stderr, "%s: a command is required\n%s", command.c_str(), root.help().c_str());
        return 2;
    } else if (!message.empty()) {
        message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
    }
    std::fprintf(stderr, "%s: %s\n%ssee '%s --help'\n", command.c_str(), message.c_str(), hint.c_str(),
                 command.c_str());
    return 2;
}

}  // namespace vaultgate::cli
