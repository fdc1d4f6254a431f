#pragma once
// Data and checks shared by the store tests: sample stores that exercise every
// field, field-by-field comparison, and file helpers.
#include "vaultgate/config/json_codec.hpp"
#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/vault/store.hpp"

#include <gtest/gtest.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace vaultgate::store_test {

inline Secret key_from(char seed) {
    std::string k(32, '\0');
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<char>(seed * 31 + i * 7);
    return Secret(k);
}

inline std::string base64(std::string_view in) {
    std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void write_file(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline ServiceConfig service(const std::string& text) {
    std::string error;
    auto s = service_from_json(nlohmann::json::parse(text), &error);
    if (!s) throw std::runtime_error(error);
    return *s;
}

inline EgressPolicy policy(const std::string& text, const std::string& name) {
    std::string error;
    auto p = policy_from_json(nlohmann::json::parse(text), &error);
    if (!p) throw std::runtime_error(error);
    p->name = name;
    return *p;
}

inline const std::string real_secret = "sk_live_REALsecretValue_0123456789abcdef";
// Bytes that are not UTF-8 and not text: the store must keep any byte string.
inline const std::string binary_secret = std::string("\x00\xff\xfe\x80zz\n\r\"\\", 10) + "tail";

inline StoreData sample_data() {
    StoreData d;
    d.generation = 42;
    StoredVault v;
    v.id = "vlt_aaaaaaaaaaaaaaaaaaaa";
    v.name = "composio";
    v.created_at_ms = 1764442800123;
    v.credentials.push_back({"COMPOSIO_API_KEY", Secret(real_secret), 3, 1764442800999});
    v.credentials.push_back({"BINARY", Secret(binary_secret), 1, -5});
    v.credentials.push_back({"EMPTY", Secret(""), 7, 0});
    v.services.push_back({"svc_1", service(R"({"host":"backend.composio.dev","redact_response":true,
        "auth_config":{"type":"api-key","header":"x-api-key","key":"COMPOSIO_API_KEY"}})")});
    v.services.push_back({"svc_2", service(R"({"host":"*.example.com","port":8443,"path_prefix":"/v1",
        "auth_config":{"type":"bearer","key":"BINARY"}})")});
    v.services.push_back({"svc_3", service(R"({"host":"git.example.org",
        "auth_config":{"type":"basic","user":"bot","key":"EMPTY"}})")});
    v.services.push_back({"svc_4", service(R"({"host":"api.example.net",
        "auth_config":{"type":"header","header":"X-Token","template":"Token {secret}","key":"COMPOSIO_API_KEY"}})")});
    v.services.push_back({"svc_5", service(R"({"host":"maps.example.com",
        "auth_config":{"type":"query","param":"api_key","key":"COMPOSIO_API_KEY"}})")});
    d.vaults.push_back(std::move(v));

    StoredVault empty;
    empty.id = "vlt_bbbbbbbbbbbbbbbbbbbb";
    empty.name = "empty-vault";
    d.vaults.push_back(std::move(empty));

    StoredSession s;
    s.id = "ses_1";
    s.token_digest = token_digest("the-token");
    s.vault_ids = {"vlt_aaaaaaaaaaaaaaaaaaaa", "vlt_bbbbbbbbbbbbbbbbbbbb"};
    s.policy = policy(R"({"allow_http":true,"allowed_domains":["*.example.com:8443","pypi.org"],
                          "allowed_cidrs":["10.0.0.0/8","fd00::/8"]})",
                      "inline");
    s.expires_at_ms = 1764443400123;
    s.source = parse_cidr("192.0.2.0/24");
    s.created_at_ms = 1764439800000;
    d.sessions.push_back(std::move(s));

    StoredSession t;
    t.id = "ses_2";
    t.token_digest = token_digest("other");
    t.policy = policy("{}", "");
    d.sessions.push_back(std::move(t));
    return d;
}

// A few kilobytes, so a save takes long enough to be killed in the middle of.
inline StoreData bulky_data(std::uint64_t generation, char fill) {
    StoreData d;
    d.generation = generation;
    for (int i = 0; i < 8; ++i) {
        StoredVault v;
        v.id = "vlt_" + std::string(20, fill) + std::to_string(i);
        v.name = "vault-" + std::to_string(i);
        v.created_at_ms = static_cast<std::int64_t>(generation) * 1000 + i;
        for (int k = 0; k < 4; ++k)
            v.credentials.push_back({"K" + std::to_string(k), Secret(std::string(100, fill) + std::to_string(k)),
                                     generation + static_cast<std::uint64_t>(k), i * 10 + k});
        v.services.push_back({"svc_" + std::to_string(i), service(R"({"host":"h.example.com",
            "auth_config":{"type":"bearer","key":"K0"}})")});
        d.vaults.push_back(std::move(v));
    }
    return d;
}

inline void expect_same_service(const ServiceConfig& a, const ServiceConfig& b) {
    EXPECT_EQ(service_to_json(a), service_to_json(b));
    EXPECT_EQ(a.auth.header, b.auth.header);  // also for types whose JSON omits it
}

inline void expect_same_policy(const EgressPolicy& a, const EgressPolicy& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(policy_to_json(a), policy_to_json(b));
}

// Field by field, values included; the structs have no operator==.
inline bool same_data(const StoreData& a, const StoreData& b) {
    const auto before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    EXPECT_EQ(a.generation, b.generation);
    EXPECT_EQ(a.vaults.size(), b.vaults.size());
    for (std::size_t i = 0; i < std::min(a.vaults.size(), b.vaults.size()); ++i) {
        const auto& x = a.vaults[i];
        const auto& y = b.vaults[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.created_at_ms, y.created_at_ms);
        EXPECT_EQ(x.credentials.size(), y.credentials.size());
        for (std::size_t k = 0; k < std::min(x.credentials.size(), y.credentials.size()); ++k) {
            EXPECT_EQ(x.credentials[k].name, y.credentials[k].name);
            EXPECT_EQ(x.credentials[k].value.reveal(), y.credentials[k].value.reveal());
            EXPECT_EQ(x.credentials[k].version, y.credentials[k].version);
            EXPECT_EQ(x.credentials[k].updated_at_ms, y.credentials[k].updated_at_ms);
        }
        EXPECT_EQ(x.services.size(), y.services.size());
        for (std::size_t k = 0; k < std::min(x.services.size(), y.services.size()); ++k) {
            EXPECT_EQ(x.services[k].id, y.services[k].id);
            expect_same_service(x.services[k].config, y.services[k].config);
        }
    }
    EXPECT_EQ(a.sessions.size(), b.sessions.size());
    for (std::size_t i = 0; i < std::min(a.sessions.size(), b.sessions.size()); ++i) {
        const auto& x = a.sessions[i];
        const auto& y = b.sessions[i];
        EXPECT_EQ(x.id, y.id);
        EXPECT_EQ(x.token_digest, y.token_digest);
        EXPECT_EQ(x.vault_ids, y.vault_ids);
        expect_same_policy(x.policy, y.policy);
        EXPECT_EQ(x.expires_at_ms, y.expires_at_ms);
        EXPECT_EQ(x.created_at_ms, y.created_at_ms);
        EXPECT_EQ(x.source.has_value(), y.source.has_value());
        if (x.source && y.source) {
            EXPECT_EQ(x.source->base, y.source->base);
            EXPECT_EQ(x.source->prefix_len, y.source->prefix_len);
        }
    }
    return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() == before;
}

// Compares without recording failures: for "equals A or B".
inline bool quietly_same(const StoreData& a, const StoreData& b) {
    if (a.generation != b.generation || a.vaults.size() != b.vaults.size() || a.sessions.size() != b.sessions.size())
        return false;
    for (std::size_t i = 0; i < a.vaults.size(); ++i) {
        const auto& x = a.vaults[i];
        const auto& y = b.vaults[i];
        if (x.id != y.id || x.name != y.name || x.created_at_ms != y.created_at_ms ||
            x.credentials.size() != y.credentials.size() || x.services.size() != y.services.size())
            return false;
        for (std::size_t k = 0; k < x.credentials.size(); ++k) {
            const auto& c = x.credentials[k];
            const auto& d = y.credentials[k];
            if (c.name != d.name || c.value.reveal() != d.value.reveal() || c.version != d.version ||
                c.updated_at_ms != d.updated_at_ms)
                return false;
        }
        for (std::size_t k = 0; k < x.services.size(); ++k)
            if (x.services[k].id != y.services[k].id ||
                service_to_json(x.services[k].config) != service_to_json(y.services[k].config))
                return false;
    }
    return true;
}

inline std::string store_error(VaultStore& store) {
    try {
        store.load();
    } catch (const StoreError& e) {
        return e.what();
    }
    return "";
}

// A small store keeps "every offset times every bit" fast.
inline StoreData small_data() {
    StoreData d;
    d.generation = 1;
    StoredVault v;
    v.id = "vlt_x";
    v.name = "v";
    v.credentials.push_back({"K", Secret("secret"), 1, 2});
    d.vaults.push_back(std::move(v));
    return d;
}

// AES-256-GCM under the store's derived key, as the file store writes, but of
// any payload: for stores this version of vaultgate would not write.
inline std::string encrypted_store_file(const Secret& master, const std::string& payload) {
    unsigned char key[32];
    EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
    EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
    char digest[] = "SHA256";
    std::string master_bytes(master.reveal());
    std::string info = "vaultgate store v1";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, master_bytes.data(), master_bytes.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
        OSSL_PARAM_construct_end(),
    };
    EXPECT_EQ(EVP_KDF_derive(kctx, key, sizeof key, params), 1);
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);

    std::string file("VGSTORE\0", 8);
    file += '\x01';
    file += std::string(12, '\x07');  // a nonce; used once, for this test
    for (int i = 7; i >= 0; --i) file += static_cast<char>((payload.size() >> (8 * i)) & 0xff);
    const auto* u = reinterpret_cast<const unsigned char*>(file.data());
    std::string cipher(payload.size(), '\0');
    unsigned char tag[16];
    int n = 0;
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    EXPECT_EQ(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key, u + 9), 1);
    EXPECT_EQ(EVP_EncryptUpdate(ctx, nullptr, &n, u, static_cast<int>(file.size())), 1);
    EXPECT_EQ(
        EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(cipher.data()), &n,
                          reinterpret_cast<const unsigned char*>(payload.data()), static_cast<int>(payload.size())),
        1);
    EXPECT_EQ(EVP_EncryptFinal_ex(ctx, tag, &n), 1);
    EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, sizeof tag, tag), 1);
    EVP_CIPHER_CTX_free(ctx);
    return file + cipher + std::string(reinterpret_cast<const char*>(tag), sizeof tag);
}

}  // namespace vaultgate::store_test
