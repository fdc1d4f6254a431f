#pragma once
// The proxy's certificate authority: creates the CA, mints leaf certificates for
// MITM'd hosts, and caches them. OpenSSL only; no Asio.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

namespace vaultgate {

struct X509Deleter {
    void operator()(X509* p) const noexcept;
};
struct EvpPkeyDeleter {
    void operator()(EVP_PKEY* p) const noexcept;
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, EvpPkeyDeleter>;

class CaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Writes DIR/ca.pem and DIR/ca-key.pem (0600). Refuses to overwrite. Throws CaError.
void create_ca_files(const std::string& dir, const std::string& common_name);

// What CertificateAuthority::load would refuse in a CA certificate and key,
// each problem with the file it is in (for check-config, which reports both).
struct CaFileProblems {
    std::optional<std::string> cert;  // unreadable, not PEM, not a CA, expired
    std::optional<std::string> key;   // unreadable, not an unencrypted PEM key, not the certificate's key
};
CaFileProblems check_ca_files(const std::string& cert_path, const std::string& key_path);

// A minted leaf: certificate plus the shared leaf key.
struct LeafCertificate {
    X509Ptr cert;
    std::shared_ptr<EVP_PKEY> key;  // one key pair shared by every leaf
    std::chrono::system_clock::time_point not_after;
};

class CertificateAuthority {
public:
    // Loads a CA certificate and key (PEM). Throws CaError naming the file.
    static std::unique_ptr<CertificateAuthority> load(const std::string& cert_path, const std::string& key_path);

    // Mints a leaf for host (a normalised name or IP literal): P-256, SAN, SKI, AKI,
    // EKU serverAuth, not-before one hour back, validity `lifetime`, random serial.
    std::shared_ptr<const LeafCertificate> mint(std::string_view host) const;

    X509* cert() const { return cert_.get(); }
    // An intermediate CA (not its own issuer) must be sent with each leaf:
    // clients trust its root, not it. Null for a root CA.
    X509* chain_cert() const { return is_root_ ? nullptr : cert_.get(); }
    std::string cert_pem() const;
    std::chrono::hours leaf_lifetime{24 * 7};

private:
    CertificateAuthority() = default;
    X509Ptr cert_;
    EvpPkeyPtr key_;
    bool is_root_ = true;
    std::shared_ptr<EVP_PKEY> leaf_key_;
};

// Bounded LRU of minted leaves, expiry-aware (a leaf within an hour of its end
// is re-minted). Thread-safe.
class LeafCache {
public:
    LeafCache(const CertificateAuthority& ca, std::size_t capacity = 4096) : ca_(ca), capacity_(capacity) {}

    std::shared_ptr<const LeafCertificate> get(std::string_view host);
    std::size_t hits() const { return hits_; }
    std::size_t misses() const { return misses_; }
    std::size_t size() const;

private:
    using Entry = std::pair<std::string, std::shared_ptr<const LeafCertificate>>;
    const CertificateAuthority& ca_;
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::list<Entry> lru_;  // front = most recent
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    // Atomic so that metrics can read them without taking the cache lock.
    std::atomic<std::size_t> hits_{0};
    std::atomic<std::size_t> misses_{0};
};

// Drains OpenSSL's error queue into one readable string.
std::string openssl_errors();

}  // namespace vaultgate
