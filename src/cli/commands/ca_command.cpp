#include "cli/command_line.hpp"
#include "vaultgate/crypto/ca.hpp"

#include <cstdio>

namespace vaultgate::cli {

int ca_command(const Args& args) {
    if (args.empty() || args.front() != "init") throw UsageError("usage: vaultgate ca init [--out DIR] [--name CN]");
    const CommandLine command_line = parse_command_line(args, OptionSpec{{"--out", "--name"}, {}, true});
    const std::string dir = command_line.value("--out").value_or("certs");
    const std::string name = command_line.value("--name").value_or("vaultgate proxy CA");
    create_ca_files(dir, name);
    std::printf("wrote %s/ca.pem and %s/ca-key.pem\n", dir.c_str(), dir.c_str());
    return 0;
}

}  // namespace vaultgate::cli
