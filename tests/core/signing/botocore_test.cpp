// A second opinion: botocore (python3-botocore) signs the same client
// requests, and its Authorization must equal the one sign_request writes.
// The targets are as SDKs send them: botocore signs an S3 path verbatim, so it
// is no judge of raw bytes an SDK would have escaped (see canonical_test).
// botocore is what the AWS CLI and boto3 sign with, so agreeing with it on
// S3 paths, double encoding, sorting and trimming is what makes the origin
// accept vaultgate's signature. Skipped when python3 or botocore is missing.
#include "vaultgate/signing/sigv4.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace vaultgate::sigv4 {
namespace {

struct ClientRequest {
    std::string method;
    std::string host;
    std::string target;
    std::vector<Header> headers;  // besides Host
    std::string body;
    Scope scope;
    bool session_token = false;
};

const Secret secret_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
const Secret token("IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJHMEUCIQ+tokenEXAMPLE==");
constexpr std::string_view key_id = "AKIAIOSFODNN7EXAMPLE";
const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1764640923));

std::vector<ClientRequest> requests() {
    const std::string body_json = R"({"anthropic_version":"bedrock-2023-05-31","max_tokens":64})";
    return {
        {"POST",
         "bedrock-runtime.us-west-2.amazonaws.com",
         "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke",
         {{"Content-Type", "application/json"}, {"Accept", "application/json"}},
         body_json,
         {"us-west-2", "bedrock"}},
        {"GET",
         "s3.us-east-1.amazonaws.com",
         "/bucket/dir%2Fname//file%20x.txt?versionId=abc&partNumber=1",
         {},
         "",
         {"us-east-1", "s3"}},
        {"PUT",
         "photos.s3.eu-west-1.amazonaws.com",
         "/2026/a%2Fb%20%281%29.jpg",
         {{"Content-Type", "image/jpeg"}, {"X-Amz-Meta-Note", "  two   spaces  "}, {"X-Amz-Storage-Class", "STANDARD"}},
         "not really a jpeg",
         {"eu-west-1", "s3"},
         true},
        {"POST",
         "sts.amazonaws.com",
         "/",
         {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}},
         "Action=GetCallerIdentity&Version=2011-06-15",
         {"us-east-1", "sts"},
         true},
        {"GET",
         "abc123.execute-api.eu-west-1.amazonaws.com",
         "/prod/./items/../orders//d%20e?b=2&a=1&a=0&empty=",
         {},
         "",
         {"eu-west-1", "execute-api"}},
        {"POST",
         "dynamodb.us-east-1.amazonaws.com",
         "/",
         {{"Content-Type", "application/x-amz-json-1.0"},
          {"X-Amz-Target", "DynamoDB_20120810.ListTables"},
          {"X-Amz-Content-Sha256", payload_sha256_hex("{}")}},
         "{}",
         {"us-east-1", "dynamodb"}},
        {"GET", "localhost:9000", "/bucket/key%2Bplus?list-type=2&prefix=a%2Fb", {}, "", {"us-east-1", "s3"}},
    };
}

// What botocore is given: the client's request less what vaultgate replaces,
// and only the headers in vaultgate's signed set (botocore would sign others too).
nlohmann::json botocore_case(const ClientRequest& r, const std::string& date) {
    nlohmann::json headers = nlohmann::json::array({nlohmann::json::array({"Host", r.host})});
    for (const Header& h : r.headers) {
        std::string lower = h.name;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower == "content-type" || lower.starts_with("x-amz-")) headers.push_back({h.name, h.value});
    }
    return {{"method", r.method},
            {"url", "http://" + r.host + r.target},  // http: botocore then hashes S3 bodies too
            {"headers", headers},
            {"body", r.body},
            {"access_key_id", key_id},
            {"secret_access_key", std::string(secret_key.reveal())},
            {"session_token", r.session_token ? nlohmann::json(std::string(token.reveal())) : nlohmann::json()},
            {"region", r.scope.region},
            {"service", r.scope.service},
            {"amz_date", date}};
}

std::string vaultgate_authorization(const ClientRequest& r) {
    RequestHead head;
    head.method = r.method;
    head.target = r.target;
    head.headers.push_back({"Host", r.host});
    head.headers.insert(head.headers.end(), r.headers.begin(), r.headers.end());
    head.headers.push_back({"User-Agent", "client/1.0"});
    const Inspection inspection = inspect(head);
    EXPECT_TRUE(inspection.unsupported.empty());
    const std::string hash = inspection.hash_body ? payload_sha256_hex(r.body) : inspection.payload_hash;
    sign_request(head, r.scope, Keys{key_id, secret_key, r.session_token ? &token : nullptr}, hash, when);
    return std::string(head.get("authorization").value_or(""));
}

TEST(SigV4Botocore, AuthorizationEqualsBotocores) {
    const std::vector<ClientRequest> cases = requests();
    nlohmann::json input = nlohmann::json::array();
    for (const ClientRequest& r : cases) input.push_back(botocore_case(r, amz_date(when)));

    char path[] = "/tmp/vaultgate-botocore-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << input.dump();
    const std::string command =
        "python3 '" VAULTGATE_SOURCE_DIR "/tests/core/signing/botocore_sign.py' '" + std::string(path) + "'";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buf[4096];
    while (const std::size_t n = fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
    const int status = pclose(pipe);
    std::remove(path);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;

    std::vector<std::string> lines;
    for (std::size_t start = 0; start < output.size();) {
        const std::size_t nl = output.find('\n', start);
        lines.push_back(output.substr(start, nl - start));
        start = nl == std::string::npos ? output.size() : nl + 1;
    }
    ASSERT_EQ(lines.size(), cases.size()) << output;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE(cases[i].method + " " + cases[i].host + cases[i].target);
        EXPECT_EQ(vaultgate_authorization(cases[i]), lines[i]);
    }
}

}  // namespace
}  // namespace vaultgate::sigv4
