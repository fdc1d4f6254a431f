// The CA is checked the way a TLS client would: leaves are verified with
// OpenSSL's own chain builder against a store holding only our CA.
#include "vaultgate/crypto/ca.hpp"
#include "temp_dir.hpp"
#include "test_pki.hpp"

#include <gtest/gtest.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

namespace vaultgate {
namespace {

namespace fs = std::filesystem;

using test::TempDir;
using test::write_pem_files;
using test::write_rsa_ca_files;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

mode_t file_mode(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
}

// One CA for the whole suite: key generation is cheap, but the tests read better
// against a single fixture.
class CaTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new TempDir();
        create_ca_files(dir_->path(), "vaultgate test CA");
        ca_ = CertificateAuthority::load(dir_->file("ca.pem"), dir_->file("ca-key.pem")).release();
    }
    static void TearDownTestSuite() {
        delete ca_;
        delete dir_;
    }

    static const CertificateAuthority& ca() { return *ca_; }
    static TempDir& dir() { return *dir_; }

    // X509_verify_cert against a store holding the CA alone, as a TLS server cert
    // for `host`. Returns the verify result code.
    static int verify(X509* leaf, const std::string& host, unsigned long extra_flags = 0) {
        std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
        X509_STORE_add_cert(store.get(), ca().cert());
        std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(), X509_STORE_CTX_free);
        X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
        X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
        X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
        if (extra_flags) X509_VERIFY_PARAM_set_flags(param, extra_flags);
        if (host.find(':') != std::string::npos || std::isdigit(static_cast<unsigned char>(host.back())))
            X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
        else
            X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
        if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
        return X509_STORE_CTX_get_error(ctx.get());
    }

    static inline TempDir* dir_ = nullptr;
    static inline CertificateAuthority* ca_ = nullptr;
};

std::string first_san(X509* cert, int* type_out) {
    auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    if (!names) return {};
    std::string out;
    if (sk_GENERAL_NAME_num(names) == 1) {
        GENERAL_NAME* n = sk_GENERAL_NAME_value(names, 0);
        int type = 0;
        auto* value = static_cast<ASN1_STRING*>(GENERAL_NAME_get0_value(n, &type));
        *type_out = type;
        out.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                   static_cast<std::size_t>(ASN1_STRING_length(value)));
    }
    GENERAL_NAMES_free(names);
    return out;
}

std::string common_name(X509* cert) {
    char buf[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
    return buf;
}

std::string octets(const ASN1_OCTET_STRING* s) {
    if (!s) return {};
    return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<std::size_t>(ASN1_STRING_length(s)));
}

std::time_t as_time_t(const ASN1_TIME* t) {
    std::tm tm{};
    ASN1_TIME_to_tm(t, &tm);
    return timegm(&tm);
}

TEST_F(CaTest, CreatesBothFilesWithTheirModes) {
    EXPECT_EQ(file_mode(dir().file("ca-key.pem")), 0600u);
    EXPECT_EQ(file_mode(dir().file("ca.pem")), 0644u);
    EXPECT_NE(read_text(dir().file("ca.pem")).find("BEGIN CERTIFICATE"), std::string::npos);
    EXPECT_NE(read_text(dir().file("ca-key.pem")).find("PRIVATE KEY"), std::string::npos);
}

TEST_F(CaTest, CreatesMissingDirectories) {
    TempDir tmp;
    auto nested = tmp.file("a/b");
    create_ca_files(nested, "nested");
    EXPECT_TRUE(fs::exists(fs::path(nested) / "ca.pem"));
}

TEST_F(CaTest, RefusesToOverwriteAndNamesTheFile) {
    const auto before = read_text(dir().file("ca.pem"));
    try {
        create_ca_files(dir().path(), "again");
        FAIL() << "overwrote an existing CA";
    } catch (const CaError& e) {
        EXPECT_NE(std::string(e.what()).find("ca.pem"), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_text(dir().file("ca.pem")), before);

    // Only the key present: still refused, and the key is named.
    TempDir tmp;
    write_text(tmp.file("ca-key.pem"), "x");
    try {
        create_ca_files(tmp.path(), "again");
        FAIL() << "overwrote an existing key";
    } catch (const CaError& e) {
        EXPECT_NE(std::string(e.what()).find("ca-key.pem"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(tmp.file("ca.pem")));
    EXPECT_EQ(read_text(tmp.file("ca-key.pem")), "x");
}

TEST_F(CaTest, RejectsAnEmptyOrOverlongName) {
    TempDir tmp;
    EXPECT_THROW(create_ca_files(tmp.path(), ""), CaError);
    EXPECT_THROW(create_ca_files(tmp.path(), std::string(65, 'a')), CaError);
}

TEST_F(CaTest, CaCertificateShape) {
    X509* cert = ca().cert();
    EXPECT_EQ(X509_get_version(cert), X509_VERSION_3);
    EXPECT_EQ(X509_check_ca(cert), 1);
    EXPECT_EQ(common_name(cert), "vaultgate test CA");
    char org[64] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_organizationName, org, sizeof org);
    EXPECT_STREQ(org, "vaultgate");
    EXPECT_EQ(X509_NAME_cmp(X509_get_subject_name(cert), X509_get_issuer_name(cert)), 0);

    int crit = -1;
    auto* bc = static_cast<BASIC_CONSTRAINTS*>(X509_get_ext_d2i(cert, NID_basic_constraints, &crit, nullptr));
    ASSERT_NE(bc, nullptr);
    EXPECT_EQ(crit, 1);
    EXPECT_TRUE(bc->ca);
    ASSERT_NE(bc->pathlen, nullptr);
    EXPECT_EQ(ASN1_INTEGER_get(bc->pathlen), 0);
    BASIC_CONSTRAINTS_free(bc);

    EXPECT_EQ(X509_get_key_usage(cert), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
    EXPECT_EQ(X509_get_extension_flags(cert) & EXFLAG_CRITICAL, 0u);  // nothing unknown and critical
    int ku = X509_get_ext_by_NID(cert, NID_key_usage, -1);
    ASSERT_GE(ku, 0);
    EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(cert, ku)), 1);
    EXPECT_NE(X509_get0_subject_key_id(cert), nullptr);
    EXPECT_EQ(X509_get_signature_nid(cert), NID_ecdsa_with_SHA256);

    std::time_t now = std::time(nullptr);
    std::time_t nb = as_time_t(X509_get0_notBefore(cert));
    std::time_t na = as_time_t(X509_get0_notAfter(cert));
    EXPECT_LE(nb, now - 3500);
    EXPECT_GE(nb, now - 3700);
    EXPECT_GE(na, now + 3650L * 86400);
    EXPECT_LE(na, now + 3653L * 86400);

    const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
    BIGNUM* bn = ASN1_INTEGER_to_BN(serial, nullptr);
    EXPECT_FALSE(BN_is_negative(bn));
    EXPECT_LE(BN_num_bits(bn), 159);
    EXPECT_GT(BN_num_bits(bn), 100);  // random, so almost surely long
    BN_free(bn);
}

TEST_F(CaTest, CertPemRoundTrips) {
    std::string pem = ca().cert_pem();
    EXPECT_EQ(pem, read_text(dir().file("ca.pem")));
}

TEST_F(CaTest, MintedLeafVerifiesAsServerCertificate) {
    auto leaf = ca().mint("backend.composio.dev");
    ASSERT_TRUE(leaf && leaf->cert && leaf->key);
    EXPECT_EQ(verify(leaf->cert.get(), "backend.composio.dev"), X509_V_OK);
    // Strict mode is what Python 3.13 turns on by default.
    EXPECT_EQ(verify(leaf->cert.get(), "backend.composio.dev", X509_V_FLAG_X509_STRICT), X509_V_OK);
    EXPECT_EQ(verify(leaf->cert.get(), "other.example.com"), X509_V_ERR_HOSTNAME_MISMATCH);
}

TEST_F(CaTest, LeafShape) {
    auto leaf = ca().mint("backend.composio.dev");
    X509* cert = leaf->cert.get();
    EXPECT_EQ(X509_get_version(cert), X509_VERSION_3);

    int type = -1;
    EXPECT_EQ(first_san(cert, &type), "backend.composio.dev");
    EXPECT_EQ(type, GEN_DNS);
    EXPECT_EQ(common_name(cert), "backend.composio.dev");
    EXPECT_EQ(X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(ca().cert())), 0);

    ASSERT_NE(X509_get0_authority_key_id(cert), nullptr);
    EXPECT_EQ(octets(X509_get0_authority_key_id(cert)), octets(X509_get0_subject_key_id(ca().cert())));
    ASSERT_NE(X509_get0_subject_key_id(cert), nullptr);
    EXPECT_NE(octets(X509_get0_subject_key_id(cert)), octets(X509_get0_subject_key_id(ca().cert())));

    EXPECT_EQ(X509_check_ca(cert), 0);
    EXPECT_EQ(X509_get_key_usage(cert), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
    EXPECT_EQ(X509_get_extended_key_usage(cert), static_cast<uint32_t>(XKU_SSL_SERVER));
    EXPECT_EQ(X509_get_signature_nid(cert), NID_ecdsa_with_SHA256);

    EVP_PKEY* pub = X509_get0_pubkey(cert);
    ASSERT_NE(pub, nullptr);
    EXPECT_TRUE(EVP_PKEY_is_a(pub, "EC"));
    char group[64] = {};
    size_t glen = 0;
    ASSERT_EQ(EVP_PKEY_get_group_name(pub, group, sizeof group, &glen), 1);
    EXPECT_STREQ(group, "prime256v1");
    EXPECT_EQ(X509_check_private_key(cert, leaf->key.get()), 1);

    std::time_t now = std::time(nullptr);
    std::time_t nb = as_time_t(X509_get0_notBefore(cert));
    std::time_t na = as_time_t(X509_get0_notAfter(cert));
    const long lifetime = static_cast<long>(std::chrono::seconds(ca().leaf_lifetime).count());
    EXPECT_LE(nb, now - 3500);
    EXPECT_GE(nb, now - 3700);
    EXPECT_LE(na, now + lifetime + 5);
    EXPECT_GE(na, now + lifetime - 5);
    EXPECT_LE(na, as_time_t(X509_get0_notAfter(ca().cert())));
    EXPECT_EQ(std::chrono::system_clock::to_time_t(leaf->not_after), na);
}

TEST_F(CaTest, LeavesShareOneKeyButNotSerials) {
    auto a = ca().mint("a.example.com");
    auto b = ca().mint("b.example.com");
    EXPECT_EQ(a->key.get(), b->key.get());
    EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(a->cert.get()), X509_get0_serialNumber(b->cert.get())), 0);
}

TEST_F(CaTest, IpLiteralsGetIpSans) {
    auto v4 = ca().mint("127.0.0.1");
    int type = -1;
    EXPECT_EQ(first_san(v4->cert.get(), &type), std::string("\x7f\x00\x00\x01", 4));
    EXPECT_EQ(type, GEN_IPADD);
    EXPECT_EQ(verify(v4->cert.get(), "127.0.0.1"), X509_V_OK);

    auto v6 = ca().mint("::1");
    EXPECT_EQ(first_san(v6->cert.get(), &type).size(), 16u);
    EXPECT_EQ(type, GEN_IPADD);
    EXPECT_EQ(verify(v6->cert.get(), "::1"), X509_V_OK);

    auto bracketed = ca().mint("[2001:db8::1]");
    EXPECT_EQ(first_san(bracketed->cert.get(), &type).size(), 16u);
    EXPECT_EQ(verify(bracketed->cert.get(), "2001:db8::1"), X509_V_OK);
}

TEST_F(CaTest, LongNamesTruncateTheCommonNameOnly) {
    std::string host;
    while (host.size() < 100) host += "abcdefghij.";
    host += "example.com";
    auto leaf = ca().mint(host);
    EXPECT_EQ(common_name(leaf->cert.get()), host.substr(0, 64));
    int type = -1;
    EXPECT_EQ(first_san(leaf->cert.get(), &type), host);
    EXPECT_EQ(verify(leaf->cert.get(), host), X509_V_OK);
}

TEST_F(CaTest, LeafNeverOutlivesTheCa) {
    auto ca2 = CertificateAuthority::load(dir().file("ca.pem"), dir().file("ca-key.pem"));
    ca2->leaf_lifetime = std::chrono::hours(24 * 365 * 20);
    auto leaf = ca2->mint("long.example.com");
    EXPECT_EQ(as_time_t(X509_get0_notAfter(leaf->cert.get())), as_time_t(X509_get0_notAfter(ca().cert())));
}

TEST_F(CaTest, ARootCaNeedsNoChainCertificate) {
    // Its own issuer: clients trust it directly, so leaves go out alone.
    EXPECT_EQ(ca().chain_cert(), nullptr);
}

TEST_F(CaTest, EmptyHostIsRefused) { EXPECT_THROW(ca().mint(""), CaError); }

TEST_F(CaTest, LoadErrorsNameTheFile) {
    TempDir tmp;
    auto expect_error_naming = [](const std::string& cert, const std::string& key, const std::string& named) {
        try {
            CertificateAuthority::load(cert, key);
            ADD_FAILURE() << "loaded " << cert << " / " << key;
        } catch (const CaError& e) {
            EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
        }
    };
    const auto cert = dir().file("ca.pem");
    const auto key = dir().file("ca-key.pem");

    expect_error_naming(tmp.file("missing.pem"), key, "missing.pem");
    expect_error_naming(cert, tmp.file("missing-key.pem"), "missing-key.pem");

    write_text(tmp.file("garbage.pem"), "not a certificate\n");
    expect_error_naming(tmp.file("garbage.pem"), key, "garbage.pem");
    expect_error_naming(cert, tmp.file("garbage.pem"), "garbage.pem");
    // A certificate where the key should be.
    expect_error_naming(cert, cert, "ca.pem");

    // Another CA's key does not match this certificate.
    create_ca_files(tmp.file("other"), "other");
    expect_error_naming(cert, tmp.file("other/ca-key.pem"), "ca-key.pem");
    try {
        CertificateAuthority::load(cert, tmp.file("other/ca-key.pem"));
    } catch (const CaError& e) {
        EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
    }
    ERR_clear_error();
}

TEST_F(CaTest, LoadRefusesALeafAsCa) {
    TempDir tmp;
    auto leaf = ca().mint("leaf.example.com");
    write_pem_files(leaf->cert.get(), leaf->key.get(), tmp.file("leaf.pem"), tmp.file("leaf-key.pem"));
    try {
        CertificateAuthority::load(tmp.file("leaf.pem"), tmp.file("leaf-key.pem"));
        FAIL() << "a leaf was accepted as a CA";
    } catch (const CaError& e) {
        EXPECT_NE(std::string(e.what()).find("not a CA"), std::string::npos) << e.what();
    }
}

// check-config reports a problem with each file, where load stops at the first.
TEST_F(CaTest, CheckCaFilesNamesTheProblemOfEachFile) {
    TempDir tmp;
    const auto cert = dir().file("ca.pem");
    const auto key = dir().file("ca-key.pem");
    auto ok = check_ca_files(cert, key);
    EXPECT_FALSE(ok.cert) << *ok.cert;
    EXPECT_FALSE(ok.key) << *ok.key;

    create_ca_files(tmp.file("other"), "other");
    auto mismatch = check_ca_files(cert, tmp.file("other/ca-key.pem"));
    EXPECT_FALSE(mismatch.cert);
    ASSERT_TRUE(mismatch.key);
    EXPECT_EQ(mismatch.key->rfind(tmp.file("other/ca-key.pem") + ": key does not match the certificate in " + cert, 0),
              0u)
        << *mismatch.key;

    auto leaf = ca().mint("leaf.example.com");
    write_pem_files(leaf->cert.get(), leaf->key.get(), tmp.file("leaf.pem"), tmp.file("leaf-key.pem"));
    auto both = check_ca_files(tmp.file("leaf.pem"), tmp.file("missing-key.pem"));
    ASSERT_TRUE(both.cert);
    EXPECT_EQ(*both.cert, tmp.file("leaf.pem") + ": not a CA certificate");
    ASSERT_TRUE(both.key);
    EXPECT_EQ(*both.key, tmp.file("missing-key.pem") + ": cannot open: No such file or directory");
    EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST_F(CaTest, LoadsAnRsaCa) {
    // Operators may bring their own CA; the leaves stay P-256 regardless.
    TempDir tmp;
    write_rsa_ca_files(tmp, "rsa ca");

    auto rsa_ca = CertificateAuthority::load(tmp.file("ca.pem"), tmp.file("ca-key.pem"));
    auto leaf = rsa_ca->mint("rsa.example.com");
    EXPECT_EQ(X509_get_signature_nid(leaf->cert.get()), NID_sha256WithRSAEncryption);
    EXPECT_TRUE(EVP_PKEY_is_a(X509_get0_pubkey(leaf->cert.get()), "EC"));
    // No SKI on that CA: the AKI falls back to the hash of its key.
    EXPECT_NE(X509_get0_authority_key_id(leaf->cert.get()), nullptr);
    // The leaf's lifetime is capped by the CA's one day.
    EXPECT_LE(as_time_t(X509_get0_notAfter(leaf->cert.get())), std::time(nullptr) + 86400 + 5);

    std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
    X509_STORE_add_cert(store.get(), rsa_ca->cert());
    std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> vctx(X509_STORE_CTX_new(), X509_STORE_CTX_free);
    X509_STORE_CTX_init(vctx.get(), store.get(), leaf->cert.get(), nullptr);
    X509_STORE_CTX_set_purpose(vctx.get(), X509_PURPOSE_SSL_SERVER);
    EXPECT_EQ(X509_verify_cert(vctx.get()), 1) << X509_verify_cert_error_string(X509_STORE_CTX_get_error(vctx.get()));
}

TEST_F(CaTest, CacheHitsReturnTheSameLeaf) {
    LeafCache cache(ca(), 8);
    auto a = cache.get("a.example.com");
    auto again = cache.get("a.example.com");
    EXPECT_EQ(a.get(), again.get());
    EXPECT_EQ(cache.hits(), 1u);
    EXPECT_EQ(cache.misses(), 1u);
    auto b = cache.get("b.example.com");
    EXPECT_NE(a.get(), b.get());
    EXPECT_EQ(cache.misses(), 2u);
    EXPECT_EQ(cache.size(), 2u);
}

TEST_F(CaTest, CacheEvictsTheLeastRecentlyUsed) {
    LeafCache cache(ca(), 2);
    auto a = cache.get("a.example.com");
    auto b = cache.get("b.example.com");
    cache.get("a.example.com");           // a is now the most recent
    auto c = cache.get("c.example.com");  // evicts b
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.get("a.example.com").get(), a.get());
    EXPECT_NE(cache.get("b.example.com").get(), b.get());  // re-minted
    EXPECT_EQ(cache.hits(), 2u);
    EXPECT_EQ(cache.misses(), 4u);
    EXPECT_EQ(cache.size(), 2u);
}

TEST_F(CaTest, CacheRemintsLeavesCloseToExpiry) {
    auto short_ca = CertificateAuthority::load(dir().file("ca.pem"), dir().file("ca-key.pem"));
    // Every leaf is inside the one-hour refresh margin from the start.
    short_ca->leaf_lifetime = std::chrono::hours(1);
    LeafCache cache(*short_ca, 4);
    auto first = cache.get("x.example.com");
    auto second = cache.get("x.example.com");
    EXPECT_NE(first.get(), second.get());
    EXPECT_EQ(cache.hits(), 0u);
    EXPECT_EQ(cache.misses(), 2u);
    EXPECT_EQ(cache.size(), 1u);
}

TEST_F(CaTest, CacheIsThreadSafe) {
    LeafCache cache(ca(), 16);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&cache, t] {
            for (int i = 0; i < 50; ++i) {
                auto leaf = cache.get("h" + std::to_string((i + t) % 24) + ".example.com");
                ASSERT_TRUE(leaf && leaf->cert);
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(cache.hits() + cache.misses(), 200u);
    EXPECT_LE(cache.size(), 16u);
}

}  // namespace
}  // namespace vaultgate
