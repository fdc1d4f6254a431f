// bench/seed_store.cpp -- writes a file store with N sessions and M services,
// for bench/scale.sh (which builds it against build/'s libraries and copies
// the store into PostgreSQL with `vaultgate store migrate` for that backend).
//
//   seed_store STORE_PATH MASTER_KEY_FILE SESSIONS SERVICES
//
// Services come 100 to a vault (vault ids vlt_bench<k>, one credential KEY
// each, hosts s<i>.bench.test); sessions use vault vlt_bench0 with an inline
// policy and expire a day from now. Tokens are never used, only their digests
// are stored.
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/vault/store.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace vaultgate;

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: seed_store STORE_PATH MASTER_KEY_FILE SESSIONS SERVICES\n");
        return 2;
    }
    const std::string path = argv[1];
    const Secret key = load_master_key(std::string(argv[2]));
    const long sessions = std::atol(argv[3]);
    const long services = std::atol(argv[4]);
    const auto now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();

    StoreData data;
    data.generation = 1;
    const long vaults = services == 0 ? 1 : (services + 99) / 100;
    for (long v = 0; v < vaults; ++v) {
        StoredVault vault;
        vault.id = "vlt_bench" + std::to_string(v);
        vault.name = "bench-" + std::to_string(v);
        vault.created_at_ms = now_ms;
        vault.credentials.push_back({"KEY", Secret("bench-secret-" + std::to_string(v)), 1, now_ms});
        for (long s = v * 100; s < std::min(services, (v + 1) * 100); ++s) {
            std::string why;
            auto config = service_from_json(
                nlohmann::json{{"host", "s" + std::to_string(s) + ".bench.test"},
                               {"auth_config", {{"type", "api-key"}, {"header", "x-api-key"}, {"key", "KEY"}}}},
                &why);
            if (!config) {
                std::fprintf(stderr, "service: %s\n", why.c_str());
                return 1;
            }
            vault.services.push_back({"svc_bench" + std::to_string(s), std::move(*config)});
        }
        data.vaults.push_back(std::move(vault));
    }
    std::string why;
    auto policy = policy_from_json(nlohmann::json{{"allowed_domains", {"pypi.org"}}}, &why);
    if (!policy) {
        std::fprintf(stderr, "policy: %s\n", why.c_str());
        return 1;
    }
    data.sessions.reserve(static_cast<std::size_t>(sessions));
    for (long i = 0; i < sessions; ++i) {
        StoredSession s;
        s.id = "ses_bench" + std::to_string(i);
        s.token_digest = token_digest("bench-token-" + std::to_string(i));
        s.vault_ids = {"vlt_bench0"};
        s.policy = *policy;
        s.expires_at_ms = now_ms + 86400000;
        s.created_at_ms = now_ms;
        data.sessions.push_back(std::move(s));
    }
    open_file_store(path, key)->save(data);
    std::printf("seeded %s: %ld sessions, %ld services in %ld vaults\n", path.c_str(), sessions, services, vaults);
    return 0;
}
