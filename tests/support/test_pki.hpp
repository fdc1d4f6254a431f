#pragma once
// The test PKI, made once here for every suite: vaultgate's own CAs in a temp
// dir, leaves they sign, and CAs made outside vaultgate (as an operator's
// company PKI would be), all written as PEM files.
#include "temp_dir.hpp"
#include "vaultgate/crypto/ca.hpp"

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <utility>

namespace vaultgate::test {

// Two CAs: the proxy's (what sandboxes trust) and the upstream's (what the
// proxy trusts), plus an untrusted one for "self-signed" upstreams.
struct TestPki {
    explicit TestPki(const TempDir& dir);
    std::string proxy_ca_cert, proxy_ca_key;
    std::string upstream_ca_cert;
    std::unique_ptr<CertificateAuthority> upstream_ca;
    std::unique_ptr<CertificateAuthority> rogue_ca;

    // Writes cert+key PEM files for host signed by upstream_ca (or rogue_ca).
    std::pair<std::string, std::string> server_files(const TempDir& dir, const std::string& host,
                                                     bool rogue = false) const;
};

// Writes `cert` and `key` as PEM files at the two paths.
void write_pem_files(X509* cert, EVP_PKEY* key, const std::string& cert_path, const std::string& key_path);

// A self-signed RSA-2048 CA without a subject key identifier, written to
// dir/ca.pem and dir/ca-key.pem.
void write_rsa_ca_files(const TempDir& dir, const std::string& common_name);

// A P-256 root and an intermediate CA signed by it, written into `dir`.
struct CaChainFiles {
    std::string root_cert;
    std::string intermediate_cert, intermediate_key;
};
CaChainFiles write_root_and_intermediate_ca(const TempDir& dir);

}  // namespace vaultgate::test
