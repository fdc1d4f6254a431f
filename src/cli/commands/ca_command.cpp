// `vaultgate ca init`: a new proxy CA.
#include "cli/command_tree.hpp"
#include "vaultgate/crypto/ca.hpp"

#include <cstdio>
#include <memory>
#include <string>

namespace vaultgate::cli {

namespace {

struct CaInitOptions {
    std::string out = "certs";
    std::string name = "vaultgate proxy CA";
};

}  // namespace

void add_ca_command(CLI::App& root, CommandRun& run) {
    CLI::App* ca = root.add_subcommand("ca", "Manage the proxy CA");
    ca->require_subcommand(1);
    auto options = std::make_shared<CaInitOptions>();
    CLI::App* init = ca->add_subcommand("init", "Write DIR/ca.pem and DIR/ca-key.pem; never overwrites");
    init->add_option("--out", options->out, "The directory to write to")->capture_default_str()->type_name("DIR");
    init->add_option("--name", options->name, "The CA's common name")->capture_default_str()->type_name("CN");
    init->callback([options, &run] {
        run = [options] {
            create_ca_files(options->out, options->name);
            std::printf("wrote %s/ca.pem and %s/ca-key.pem\n", options->out.c_str(), options->out.c_str());
            return 0;
        };
    });
}

}  // namespace vaultgate::cli
