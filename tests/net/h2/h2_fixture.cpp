#include "h2_fixture.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>

namespace vaultgate::test {

namespace {

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

H2Origin::H2Origin(const TempDir& dir, const TestPki& pki, const std::vector<std::string>& hosts)
    : log_path_(dir.file("h2-origin.jsonl")) {
    std::vector<std::string> argv = {
        "/usr/bin/python3", std::string(VAULTGATE_SOURCE_DIR) + "/tests/net/h2/h2_origin.py", "--log", log_path_};
    for (const auto& host : hosts) {
        const auto [cert, key] = pki.server_files(dir, host);
        argv.push_back("--site");
        argv.push_back(host + "=" + cert + "," + key);
    }
    const std::string out_path = dir.file("h2-origin.out");
    pid_ = fork();
    if (pid_ == 0) {
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(out, 1);
        dup2(out, 2);
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    const bool up = eventually([&] { return file_text(out_path).find('\n') != std::string::npos; }, 20000);
    const std::string out = file_text(out_path);
    EXPECT_TRUE(up && out.rfind("listening ", 0) == 0) << out;
    if (out.rfind("listening ", 0) == 0) port_ = static_cast<std::uint16_t>(std::stoi(out.substr(10)));
}

H2Origin::~H2Origin() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

std::vector<nlohmann::json> H2Origin::requests() const {
    std::vector<nlohmann::json> out;
    std::istringstream lines(file_text(log_path_));
    std::string line;
    while (std::getline(lines, line))
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
}

void H2Test::start_h2_origin() {
    h2_origin_ = std::make_unique<H2Origin>(dir_, pki_, std::vector<std::string>{"api.h2.test", "redact.h2.test"});
    start_proxy();
}

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
    std::string services = "      - host: redact.test\n        port: " + port +
                           "\n        auth: { type: api-key, key: BENCH_KEY }\n        redact_response: true\n";
    if (h2_origin_)
        for (const char* host : {"api.h2.test", "redact.h2.test"})
            services += std::string("      - host: ") + host + "\n        port: " + std::to_string(h2_origin_->port()) +
                        "\n        auth: { type: api-key, header: x-api-key, key: BENCH_KEY }\n" +
                        (host[0] == 'r' ? "        redact_response: true\n" : "");
    auto yaml = base_config(dir_, pki_, bound_.port(), bound_.port(), services, extra);
    yaml.replace(yaml.find("    rogue.test: 127.0.0.1\n"), 0,
                 "    redact.test: 127.0.0.1\n    api.h2.test: 127.0.0.1\n    redact.h2.test: 127.0.0.1\n");
    yaml.replace(yaml.find("limits:\n") + 8, 0, limits);
    proxy_ = std::make_unique<ProxyUnderTest>(yaml, proxy_threads_);
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
