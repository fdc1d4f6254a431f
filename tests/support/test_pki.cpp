#include "test_pki.hpp"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <stdexcept>

namespace vaultgate::test {

namespace fs = std::filesystem;

TestPki::TestPki(const TempDir& dir) {
    fs::create_directories(dir.file("proxy-ca"));
    create_ca_files(dir.file("proxy-ca"), "vaultgate test proxy CA");
    proxy_ca_cert = dir.file("proxy-ca/ca.pem");
    proxy_ca_key = dir.file("proxy-ca/ca-key.pem");
    create_ca_files(dir.file("upstream-ca"), "test upstream CA");
    upstream_ca_cert = dir.file("upstream-ca/ca.pem");
    upstream_ca = CertificateAuthority::load(upstream_ca_cert, dir.file("upstream-ca/ca-key.pem"));
    create_ca_files(dir.file("rogue-ca"), "rogue CA");
    rogue_ca = CertificateAuthority::load(dir.file("rogue-ca/ca.pem"), dir.file("rogue-ca/ca-key.pem"));
}

std::pair<std::string, std::string> TestPki::server_files(const TempDir& dir, const std::string& host,
                                                          bool rogue) const {
    auto leaf = (rogue ? rogue_ca : upstream_ca)->mint(host);
    auto cert_path = dir.file((rogue ? "rogue-" : "srv-") + host + ".pem");
    auto key_path = dir.file((rogue ? "rogue-" : "srv-") + host + "-key.pem");
    write_pem_files(leaf->cert.get(), leaf->key.get(), cert_path, key_path);
    return {cert_path, key_path};
}

void write_pem_files(X509* cert, EVP_PKEY* key, const std::string& cert_path, const std::string& key_path) {
    std::unique_ptr<BIO, decltype(&BIO_free_all)> cbio(BIO_new_file(cert_path.c_str(), "w"), BIO_free_all);
    std::unique_ptr<BIO, decltype(&BIO_free_all)> kbio(BIO_new_file(key_path.c_str(), "w"), BIO_free_all);
    if (!cbio || !kbio || PEM_write_bio_X509(cbio.get(), cert) != 1 ||
        PEM_write_bio_PrivateKey(kbio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
        throw std::runtime_error("cannot write " + cert_path + " and " + key_path);
}

namespace {

using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value);
    if (!ext || X509_add_ext(cert, ext, -1) != 1) throw std::runtime_error("cannot add a test certificate extension");
    X509_EXTENSION_free(ext);
}

// A CA certificate for `key`, valid for a day, signed by the issuer (itself
// when `issuer` is null). `key_ids` adds subject and authority key identifiers.
CertPtr make_ca_cert(EVP_PKEY* key, const std::string& common_name, long serial, const char* basic_constraints,
                     X509* issuer, EVP_PKEY* issuer_key, bool key_ids) {
    CertPtr cert(X509_new(), X509_free);
    X509_set_version(cert.get(), X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                               -1, -1, 0);
    X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
    X509_set_pubkey(cert.get(), key);
    X509* signer = issuer ? issuer : cert.get();
    add_extension(cert.get(), signer, NID_basic_constraints, basic_constraints);
    if (key_ids) {
        add_extension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
        add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
        add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid");
    }
    if (X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) <= 0)
        throw std::runtime_error("cannot sign a test certificate");
    return cert;
}

}  // namespace

void write_rsa_ca_files(const TempDir& dir, const std::string& common_name) {
    KeyPtr key(EVP_RSA_gen(2048), EVP_PKEY_free);
    if (!key) throw std::runtime_error("cannot generate an RSA key");
    auto cert = make_ca_cert(key.get(), common_name, 7, "critical,CA:TRUE", nullptr, nullptr, false);
    write_pem_files(cert.get(), key.get(), dir.file("ca.pem"), dir.file("ca-key.pem"));
}

CaChainFiles write_root_and_intermediate_ca(const TempDir& dir) {
    KeyPtr root_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    KeyPtr inter_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    if (!root_key || !inter_key) throw std::runtime_error("cannot generate a P-256 key");
    auto root =
        make_ca_cert(root_key.get(), "vaultgate test root", 1, "critical,CA:TRUE,pathlen:1", nullptr, nullptr, true);
    auto inter = make_ca_cert(inter_key.get(), "vaultgate test intermediate", 2, "critical,CA:TRUE,pathlen:0",
                              root.get(), root_key.get(), true);
    CaChainFiles files{dir.file("root.pem"), dir.file("inter.pem"), dir.file("inter-key.pem")};
    write_pem_files(root.get(), root_key.get(), files.root_cert, dir.file("root-key.pem"));
    write_pem_files(inter.get(), inter_key.get(), files.intermediate_cert, files.intermediate_key);
    return files;
}

}  // namespace vaultgate::test
