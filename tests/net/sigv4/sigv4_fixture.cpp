#include "sigv4_fixture.hpp"

#include "vaultgate/observe/diag_log.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace vaultgate::test {

namespace {

std::string text_of(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Every AWS endpoint name the tests use; all resolve to the one origin.
const std::vector<std::string> aws_hosts = {
    "sqs.eu-west-1.amazonaws.com",
    "dynamodb.us-west-2.amazonaws.com",
    "s3.us-east-1.amazonaws.com",
    "media-bucket.s3.eu-central-1.amazonaws.com",
    "bedrock-runtime.us-west-2.amazonaws.com",
    "api.internal.test",
    "gateway.internal.test",
};

}  // namespace

Sigv4Origin::Sigv4Origin(const TempDir& dir, const TestPki& pki, const std::vector<std::string>& hosts)
    : log_path_(dir.file("origin-verdicts.jsonl")), port_(free_port()) {
    std::vector<std::string> argv = {"/usr/bin/python3",
                                     std::string(VAULTGATE_SOURCE_DIR) + "/tests/net/sigv4/sigv4_origin.py",
                                     "--port",
                                     std::to_string(port_),
                                     "--log",
                                     log_path_};
    for (const auto& host : hosts) {
        const auto [cert, key] = pki.server_files(dir, host);
        argv.push_back("--cert");
        argv.push_back(host + "=" + cert + "," + key);
    }
    const std::string out_path = dir.file("origin.out");
    pid_ = fork();
    if (pid_ == 0) {
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(out, 1);
        dup2(out, 2);
        setenv("SIGV4_ORIGIN_SECRET", aws_secret_access_key, 1);
        setenv("SIGV4_ORIGIN_ACCESS_KEY", aws_access_key_id, 1);
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    const bool up = eventually([&] { return text_of(out_path).find("listening") != std::string::npos; }, 20000);
    EXPECT_TRUE(up) << text_of(out_path);
}

Sigv4Origin::~Sigv4Origin() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

std::vector<nlohmann::json> Sigv4Origin::verdicts() const {
    std::vector<nlohmann::json> out;
    std::istringstream lines(text_of(log_path_));
    std::string line;
    while (std::getline(lines, line))
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
}

Sigv4Test::Sigv4Test() : pki_(dir_) { origin_ = std::make_unique<Sigv4Origin>(dir_, pki_, aws_hosts); }

Sigv4Test::~Sigv4Test() { stop(); }

std::string Sigv4Test::stop() {
    if (!proxy_) return {};
    const std::string access = stop_and_read_access_log(proxy_);
    std::fflush(stderr);
    dup2(saved_stderr_, 2);
    close(saved_stderr_);
    const std::string diagnostic = text_of(dir_.file("stderr.log"));
    // No log line, access or diagnostic (at debug level), holds a key.
    for (const std::string& log : {access, diagnostic}) {
        EXPECT_EQ(log.find(aws_secret_access_key), std::string::npos);
        EXPECT_EQ(log.find(aws_session_token), std::string::npos);
    }
    return access;
}

void Sigv4Test::start(const std::string& limits) {
    dir_.write("admin.token", std::string(serve_admin_token) + "\n");
    std::string master(32, '\0');
    for (std::size_t i = 0; i < master.size(); ++i) master[i] = static_cast<char>(i * 5 + 3);
    dir_.write("master.key", master);
    const std::string akid = dir_.write("akid", std::string(aws_access_key_id) + "\n");
    const std::string secret = dir_.write("secret", std::string(aws_secret_access_key) + "\n");
    const std::string token = dir_.write("token", std::string(aws_session_token) + "\n");
    const std::string port = std::to_string(origin_->port());
    const std::string keys = "access_key_id: AWS_ACCESS_KEY_ID, secret_access_key: AWS_SECRET_ACCESS_KEY";
    std::ostringstream y;
    y << "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
      << "ca:\n  cert: " << pki_.proxy_ca_cert << "\n  key: " << pki_.proxy_ca_key << "\n"
      << "upstream:\n  ca_file: " << pki_.upstream_ca_cert << "\n  resolve:\n";
    for (const auto& host : aws_hosts) y << "    " << host << ": 127.0.0.1\n";
    y << "store:\n  path: " << dir_.file("vaultgate.db") << "\n  master_key_file: " << dir_.file("master.key") << "\n"
      << "admin:\n  token_file: " << dir_.file("admin.token") << "\n"
      << "log:\n  access: " << dir_.file("access.log") << "\n  level: debug\n"
      << "limits:\n"
      << (limits.find("idle_timeout:") == std::string::npos ? "  idle_timeout: 30s\n" : "") << limits
      << "vaults:\n  - name: aws\n    credentials:\n"
      << "      AWS_ACCESS_KEY_ID: { file: " << akid << " }\n"
      << "      AWS_SECRET_ACCESS_KEY: { file: " << secret << " }\n"
      << "      AWS_SESSION_TOKEN: { file: " << token << " }\n"
      << "    services:\n";
    auto service = [&](const std::string& host, const std::string& extra) {
        y << "      - host: " << host << "\n        port: " << port << "\n        auth: { type: aws-sigv4, " << keys
          << extra << " }\n";
    };
    service("sqs.eu-west-1.amazonaws.com", "");
    service("dynamodb.us-west-2.amazonaws.com", ", session_token: AWS_SESSION_TOKEN");
    service("s3.us-east-1.amazonaws.com", "");
    service("media-bucket.s3.eu-central-1.amazonaws.com", "");
    service("bedrock-runtime.us-west-2.amazonaws.com", "");
    service("api.internal.test", "");
    service("gateway.internal.test", ", region: eu-north-1, service: execute-api");
    y << "sessions:\n  default: { vaults: [aws], egress_policy: test }\n"
      << "egress_policies:\n  test: {}\n";
    std::fflush(stderr);
    saved_stderr_ = dup(2);
    const int log = ::open(dir_.file("stderr.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(log, 2);
    close(log);
    set_log_level(LogLevel::debug);
    proxy_ = std::make_unique<ProxyUnderTest>(y.str());
}

std::unique_ptr<RawClient> Sigv4Test::open(const std::string& host) {
    auto c = std::make_unique<RawClient>(proxy_->port());
    const std::string head = c->connect(authority(host));
    EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
    std::string err;
    EXPECT_TRUE(c->start_tls(pki_.proxy_ca_cert, host, &err)) << err;
    return c;
}

RawClient::Response Sigv4Test::send(const std::string& host, const std::string& request_line, const std::string& fields,
                                    const std::string& body) {
    auto c = open(host);
    c->write(request_line + " HTTP/1.1\r\nHost: " + authority(host) + "\r\n" + fields + "\r\n" + body);
    auto r = c->read_response();
    return r ? *r : RawClient::Response{};
}

nlohmann::json Sigv4Test::verdict_of(const RawClient::Response& r) {
    auto v = nlohmann::json::parse(r.body, nullptr, false);
    return v.is_discarded() ? nlohmann::json::object() : v;
}

std::vector<std::string> Sigv4Test::seen_header(const nlohmann::json& verdict, const std::string& name) {
    std::vector<std::string> out;
    if (!verdict.contains("headers")) return out;
    for (const auto& h : verdict["headers"])
        if (iequals(h[0].get<std::string>(), name)) out.push_back(h[1].get<std::string>());
    return out;
}

}  // namespace vaultgate::test
