#include "h2_fixture.hpp"

namespace vaultgate::test {

H2Test::H2Test()
    : pki_(dir_),
      bound_files_(pki_.server_files(dir_, "api.bound.test")),
      redact_files_(pki_.server_files(dir_, "redact.test")),
      bound_(bound_files_.first, bound_files_.second),
      redacting_(redact_files_.first, redact_files_.second) {
    start_proxy();
}

void H2Test::start_proxy(const std::string& limits, const std::string& extra) {
    proxy_.reset();
    const std::string port = std::to_string(redacting_.port());
    auto yaml = base_config(dir_, pki_, bound_.port(), bound_.port(),
                            "      - host: redact.test\n        port: " + port +
                                "\n        auth: { type: api-key, key: BENCH_KEY }\n        redact_response: true\n",
                            extra);
    yaml.replace(yaml.find("    rogue.test: 127.0.0.1\n"), 0, "    redact.test: 127.0.0.1\n");
    yaml.replace(yaml.find("limits:\n") + 8, 0, limits);
    proxy_ = std::make_unique<ProxyUnderTest>(yaml);
}

void H2Test::TearDown() {
    // Whatever happened in the test, no log line may carry the secret.
    EXPECT_EQ(stop_and_read_access_log(proxy_).find(test_secret), std::string::npos);
}

nlohmann::json H2Test::h2_client(const std::string& authority, const std::vector<std::string>& args,
                                 const std::string& body, bool with_body) {
    std::vector<std::string> argv{"/usr/bin/python3",
                                  std::string(VAULTGATE_SOURCE_DIR) + "/tests/net/h2/h2_client.py",
                                  "--proxy",
                                  std::to_string(proxy_->port()),
                                  "--ca",
                                  pki_.proxy_ca_cert,
                                  "--authority",
                                  authority};
    if (with_body) {
        argv.push_back("--body");
        argv.push_back(body);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_command(argv, "", {}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    try {
        return nlohmann::json::parse(r.out);
    } catch (const std::exception&) {
        ADD_FAILURE() << "h2_client.py printed no JSON: " << r.out << r.err;
        return nullptr;
    }
}

std::string H2Test::curl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"curl",       "-sS",
                                  "--max-time", "20",
                                  "--proxy",    "http://127.0.0.1:" + std::to_string(proxy_->port()),
                                  "--cacert",   pki_.proxy_ca_cert};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run_command(argv, "", {}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
}

}  // namespace vaultgate::test
