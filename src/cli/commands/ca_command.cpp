#include "cli/commands.hpp"
#include "vaultgate/crypto/ca.hpp"

#include <cstdio>

namespace vaultgate::cli {

int ca_command(const Args& args) {
    if (args.empty() || args.front() != "init") throw UsageError("usage: vaultgate ca init [--out DIR] [--name CN]");
    std::string dir = "certs";
    std::string name = "vaultgate proxy CA";
    option_value(args, "--out", dir);
    option_value(args, "--name", name);
    create_ca_files(dir, name);
    std::printf("wrote %s/ca.pem and %s/ca-key.pem\n", dir.c_str(), dir.c_str());
    return 0;
}

}  // namespace vaultgate::cli
