// The admin API: routing, bodies, readiness, logs and concurrent changes.
#include "admin_api_fixture.hpp"

namespace vaultgate::admin_test {
namespace {

// --- plumbing ---

TEST_F(AdminApiTest, HealthzAndRouting) {
    auto r = call("GET", "/healthz");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(parse(r), json({{"status", "ok"}}));

    r = call("POST", "/healthz");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(error_code(r), "method_not_allowed");
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Allow", "GET"}));

    r = call("DELETE", "/v1/vaults");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.headers.at(0).second, "GET, POST");
    EXPECT_EQ(call("GET", "/v1/vaults/x/credentials/K").status, 405);
    r = call("PUT", "/v1/sessions");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.headers.at(0).second, "GET, POST");
    r = call("PUT", "/v1/vaults/x");
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.headers.at(0).second, "GET, DELETE");

    for (const char* path :
         {"/", "", "/nope", "/v1", "/v1/", "/v1/vaults/", "/v1//vaults", "/v2/vaults", "/v1/vaults/x/other",
          "/v1/vaults/x/credentials/K/more", "/v1/logs/x", "/healthz/x", "/v1/sessions/a/b"}) {
        r = call("GET", path);
        EXPECT_EQ(r.status, 404) << path;
        EXPECT_EQ(error_code(r), "not_found") << path;
    }
}

TEST_F(AdminApiTest, Metrics) {
    metrics_.denial("domain_not_allowed");
    const auto r = call("GET", "/metrics");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.content_type, "text/plain; version=0.0.4");
    EXPECT_NE(r.body.find("vaultgate_cert_cache_hits_total 42"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("vaultgate_cert_cache_misses_total 7"), std::string::npos);
    EXPECT_NE(r.body.find("vaultgate_access_log_dropped_lines_total 3"), std::string::npos);
    EXPECT_NE(r.body.find("vaultgate_upstream_pooled_connections 5"), std::string::npos);
    EXPECT_NE(r.body.find("\nvaultgate_block_cache_bytes 9\n"), std::string::npos);
    EXPECT_NE(r.body.find("reason=\"domain_not_allowed\""), std::string::npos);
    EXPECT_EQ(call("PUT", "/metrics").status, 405);
}

TEST_F(AdminApiTest, BodyErrors) {
    auto r = call("POST", "/v1/vaults", "{\"name\":");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_json");
    // A truncated body around a value: the parser's context must not come back.
    r = call("POST", "/v1/vaults", "{\"name\":\"v\",\"value\":\"" + leak);
    EXPECT_EQ(error_code(r), "invalid_json");
    r = call("POST", "/v1/vaults", "");
    EXPECT_EQ(error_code(r), "invalid_json");
    r = call("POST", "/v1/vaults", "[\"v\"]");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_request");
    r = call("POST", "/v1/vaults", std::string(100000, '['));
    EXPECT_EQ(r.status, 413);
    EXPECT_EQ(error_code(r), "body_too_large");
    r = call("POST", "/v1/vaults", std::string(1000, '[') + std::string(1000, ']'));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(error_code(r), "invalid_json");
    // Brackets inside strings do not count as nesting.
    r = call("POST", "/v1/vaults", json{{"name", "x"}, {"zz", std::string(100, '[')}}.dump());
    EXPECT_EQ(error_code(r), "invalid_request");
}

TEST_F(AdminApiTest, NotReadyBeforeLoad) {
    auto api = make_api(parse_config(base_config, "test.yaml"), false);
    EXPECT_EQ(call_on(*api, "GET", "/healthz").status, 200);
    const auto r = call_on(*api, "POST", "/v1/vaults", R"({"name":"early"})");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(error_code(r), "not_ready");
}

// --- logs ---

TEST_F(AdminApiTest, Logs) {
    const std::string alpha = create_vault("alpha");
    auto entry = [](std::string session, std::string vault, std::string host) {
        AccessLogEntry e;
        e.ts = sys_clock::now();
        e.session = std::move(session);
        e.vault = std::move(vault);
        e.ingress = "mitm";
        e.method = "GET";
        e.host = std::move(host);
        e.port = 443;
        e.set_path("/p?key=secret");
        e.status = 200;
        return e;
    };
    log_.write(entry("s1", "alpha", "one.example.com"));
    log_.write(entry("s2", "cfgvault", "two.example.com"));
    log_.write(entry("s1", "alpha", "three.example.com"));
    log_.write(entry("s2", "", "four.example.com"));

    auto hosts = [&](std::map<std::string, std::string> query) {
        const auto r = call("GET", "/v1/logs", "", std::move(query));
        EXPECT_EQ(r.status, 200) << r.body;
        std::vector<std::string> out;
        const json body = parse(r);
        for (const auto& e : body["entries"]) out.push_back(e["host"]);
        return out;
    };
    using hs = std::vector<std::string>;
    EXPECT_EQ(hosts({}), (hs{"one.example.com", "two.example.com", "three.example.com", "four.example.com"}));
    EXPECT_EQ(hosts({{"limit", "2"}}), (hs{"three.example.com", "four.example.com"}));
    EXPECT_EQ(hosts({{"vault", "alpha"}}), (hs{"one.example.com", "three.example.com"}));
    EXPECT_EQ(hosts({{"vault", alpha}}), (hs{"one.example.com", "three.example.com"}));
    EXPECT_EQ(hosts({{"vault", "cfgvault"}}), (hs{"two.example.com"}));
    EXPECT_EQ(hosts({{"session", "s2"}}), (hs{"two.example.com", "four.example.com"}));
    EXPECT_EQ(hosts({{"session", "s1"}, {"vault", "alpha"}, {"limit", "1"}}), (hs{"three.example.com"}));
    EXPECT_EQ(hosts({{"session", "nobody"}}), hs{});

    const json first = parse(call("GET", "/v1/logs", "", {{"limit", "4"}}))["entries"][0];
    EXPECT_EQ(first["path"], "/p");
    EXPECT_EQ(first["session"], "s1");
    EXPECT_EQ(first["status"], 200);
    EXPECT_TRUE(first["ts"].is_string());

    for (const char* bad : {"0", "-1", "abc", "10001", "1.5", "2x"}) {
        const auto r = call("GET", "/v1/logs", "", {{"limit", bad}});
        EXPECT_EQ(r.status, 400) << bad;
        EXPECT_EQ(error_code(r), "invalid_query") << bad;
    }
    EXPECT_EQ(call("GET", "/v1/logs", "", {{"limit", "10000"}}).status, 200);
    EXPECT_EQ(call("POST", "/v1/logs").status, 405);
}

// --- concurrency ---

TEST_F(AdminApiTest, ConcurrentChanges) {
    constexpr int threads = 4, per_thread = 5;
    std::vector<std::thread> workers;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const std::string name = "c" + std::to_string(t) + "-" + std::to_string(i);
                const auto r = call("POST", "/v1/vaults", json{{"name", name}}.dump());
                if (r.status != 201) {
                    ++failures;
                    continue;
                }
                const std::string id = parse(r)["id"];
                const auto c = call("POST", "/v1/vaults/" + id + "/credentials",
                                    json{{"name", "K"}, {"value", api_secret}}.dump());
                const auto p =
                    call("PUT", "/v1/vaults/" + id + "/credentials/K", json{{"value", rotated_secret}}.dump());
                if (c.status != 201 || p.status != 200) ++failures;
                call("GET", "/v1/vaults");
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    const auto state = snapshot();
    EXPECT_EQ(state->vaults.size(), 1u + threads * per_thread);
    for (const auto& [name, vault] : state->vaults) {
        if (vault.from_config) continue;
        EXPECT_EQ(vault.credentials.at("K").reveal(), rotated_secret) << name;
    }
    EXPECT_EQ(open_file_store(store_path(), master_key())->load().vaults.size(),
              static_cast<std::size_t>(threads * per_thread));
}

}  // namespace
}  // namespace vaultgate::admin_test
