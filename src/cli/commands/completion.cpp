// `vaultgate completion bash`: a bash completion script read from the command
// tree itself, so it names exactly the commands and options the binary takes.
#include "cli/command_tree.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace vaultgate::cli {

namespace {

struct Level {
    std::string path;                        // " vault add-service": the subcommand words, each after a space
    std::vector<std::string> words;          // subcommands, then options
    std::vector<std::string> value_options;  // options followed by a value
};

void walk(const CLI::App& app, const std::string& path, std::vector<Level>& levels) {
    Level level{path, {}, {}};
    const auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
    for (const CLI::App* sub : subcommands) level.words.push_back(sub->get_name());
    for (const CLI::Option* option : app.get_options()) {
        if (option->get_positional() || option->get_group().empty()) continue;  // hidden
        std::vector<std::string> names;
        for (const auto& name : option->get_lnames()) names.push_back("--" + name);
        for (const auto& name : option->get_snames()) names.push_back("-" + name);
        for (const auto& name : names) {
            level.words.push_back(name);
            if (option->get_type_size_max() > 0) level.value_options.push_back(name);
        }
    }
    levels.push_back(level);
    for (const CLI::App* sub : subcommands) walk(*sub, path + " " + sub->get_name(), levels);
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

std::string bash_completion_script(const CLI::App& root) {
    std::vector<Level> levels;
    walk(root, "", levels);
    const std::string name = root.get_name();
    std::string s = "# bash completion for " + name + "; `" + name +
                    " completion bash` prints it.\n"
                    "_" +
                    name +
                    "() {\n"
                    "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" path=\"\" word words values i\n"
                    "    ((COMP_CWORD > 0)) && prev=\"${COMP_WORDS[COMP_CWORD - 1]}\"\n"
                    "    # The subcommand path so far; option words and their values are skipped.\n"
                    "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
                    "        word=\"${COMP_WORDS[i]}\"\n"
                    "        case \"$path $word\" in\n";
    for (const Level& level : levels)
        if (!level.path.empty()) s += "            \"" + level.path + "\") path=\"$path $word\" ;;\n";
    s += "        esac\n"
         "    done\n"
         "    case \"$path\" in\n";
    for (const Level& level : levels)
        s += "        \"" + level.path + "\") words=\"" + joined(level.words) + "\"; values=\"" +
             joined(level.value_options) + "\" ;;\n";
    s += "        *) words=\"\"; values=\"\" ;;\n"
         "    esac\n"
         "    case \" $values \" in\n"
         "        *\" $prev \"*)\n"
         "            [[ -n \"$prev\" ]] && { COMPREPLY=($(compgen -f -- \"$cur\")); return 0; } ;;\n"
         "    esac\n"
         "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "}\n"
         "complete -F _" +
         name + " " + name + "\n";
    return s;
}

}  // namespace

void add_completion_command(CLI::App& root, CommandRun& run) {
    CLI::App* completion = root.add_subcommand("completion", "Print a shell completion script");
    completion->require_subcommand(1);
    completion->add_subcommand("bash", "The bash completion script (source it, or install it)")
        ->callback([&root, &run] {
            run = [&root] {
                const std::string script = bash_completion_script(root);
                std::fwrite(script.data(), 1, script.size(), stdout);
                return 0;
            };
        });
}

}  // namespace vaultgate::cli
