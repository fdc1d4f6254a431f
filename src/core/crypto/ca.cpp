// The proxy's certificate authority. Every OpenSSL handle is owned by a
// unique_ptr with its free function, and every failure drains OpenSSL's error
// queue into the exception message, so an operator sees why, not just "failed".
#include "vaultgate/crypto/ca.hpp"

#include "vaultgate/crypto/openssl_owned.hpp"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>

namespace vaultgate {

void X509Deleter::operator()(X509* p) const noexcept { X509_free(p); }
void EvpPkeyDeleter::operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }

std::string openssl_errors() {
    std::string out;
    char buf[256];
    while (unsigned long code = ERR_get_error()) {
        ERR_error_string_n(code, buf, sizeof buf);
        if (!out.empty()) out += "; ";
        out += buf;
    }
    return out;
}

namespace {

void bio_free(BIO* p) { BIO_free_all(p); }
using BioPtr = Owned<BIO, bio_free>;
using PkeyCtxPtr = Owned<EVP_PKEY_CTX, EVP_PKEY_CTX_free>;
using BignumPtr = Owned<BIGNUM, BN_free>;
using NamePtr = Owned<X509_NAME, X509_NAME_free>;
using OctetPtr = Owned<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free>;
using ExtensionPtr = Owned<X509_EXTENSION, X509_EXTENSION_free>;
using GeneralNamesPtr = Owned<GENERAL_NAMES, GENERAL_NAMES_free>;
using GeneralNamePtr = Owned<GENERAL_NAME, GENERAL_NAME_free>;
using AkidPtr = Owned<AUTHORITY_KEYID, AUTHORITY_KEYID_free>;
using Ia5Ptr = Owned<ASN1_IA5STRING, ASN1_IA5STRING_free>;

constexpr long one_hour = 60 * 60;
constexpr long ca_validity_days = 3652;      // ten years, leap days included
constexpr int serial_bits = 159;             // RFC 5280: at most 20 octets, positive
constexpr std::size_t max_common_name = 64;  // ub-common-name
// The cache re-mints a leaf this long before its end, so that no handshake gets
// a leaf that expires while the connection is still young.
constexpr std::chrono::hours leaf_refresh_margin{1};

// Builds the message for a failed OpenSSL call, with whatever the queue holds.
[[noreturn]] void fail(const std::string& what) {
    std::string detail = openssl_errors();
    throw CaError(detail.empty() ? what : what + ": " + detail);
}

EvpPkeyPtr generate_p256_key() {
    PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
    if (!ctx || EVP_PKEY_keygen_init(ctx.get()) <= 0 || EVP_PKEY_CTX_set_group_name(ctx.get(), "P-256") <= 0)
        fail("cannot set up P-256 key generation");
    EVP_PKEY* raw = nullptr;
    if (EVP_PKEY_generate(ctx.get(), &raw) <= 0) fail("cannot generate a P-256 key");
    return EvpPkeyPtr(raw);
}

void set_random_serial(X509* x) {
    BignumPtr bn(BN_new());
    if (!bn || !BN_rand(bn.get(), serial_bits, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY))
        fail("cannot draw a certificate serial");
    // RFC 5280 wants a positive serial; zero is astronomically unlikely but cheap to exclude.
    if (BN_is_zero(bn.get()) && !BN_one(bn.get())) fail("cannot draw a certificate serial");
    if (!BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x))) fail("cannot set the certificate serial");
}

// SKI by RFC 5280 4.2.1.2 method 1: SHA-1 over the subjectPublicKey bits.
OctetPtr key_identifier(const X509* x) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!X509_pubkey_digest(x, EVP_sha1(), md, &len)) fail("cannot hash the public key");
    OctetPtr id(ASN1_OCTET_STRING_new());
    if (!id || !ASN1_OCTET_STRING_set(id.get(), md, static_cast<int>(len))) fail("cannot build a key identifier");
    return id;
}

template <class Value>
void add_extension(X509* x, int nid, Value* value, bool critical, const char* what) {
    if (X509_add1_ext_i2d(x, nid, value, critical ? 1 : 0, X509V3_ADD_REPLACE) != 1)
        fail(std::string("cannot add the ") + what + " extension");
}

// For extensions whose value is a fixed, well-known string we use OpenSSL's own
// config syntax; only constant strings go through it, never host names.
void add_conf_extension(X509* x, X509V3_CTX* ctx, int nid, const char* value, const char* what) {
    ExtensionPtr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value));
    if (!ext || !X509_add_ext(x, ext.get(), -1)) fail(std::string("cannot add the ") + what + " extension");
}

void add_key_identifiers(X509* x, const X509* issuer) {
    OctetPtr ski = key_identifier(x);
    add_extension(x, NID_subject_key_identifier, ski.get(), false, "subjectKeyIdentifier");

    // The AKI must equal the issuer's SKI; an external CA may lack one, and
    // then the same method-1 hash is what a verifier would compute.
    AkidPtr akid(AUTHORITY_KEYID_new());
    if (!akid) fail("cannot build the authorityKeyIdentifier");
    const ASN1_OCTET_STRING* issuer_ski = X509_get0_subject_key_id(const_cast<X509*>(issuer));
    if (issuer_ski) {
        akid->keyid = ASN1_OCTET_STRING_dup(issuer_ski);
        if (!akid->keyid) fail("cannot build the authorityKeyIdentifier");
    } else {
        akid->keyid = key_identifier(issuer).release();
    }
    add_extension(x, NID_authority_key_identifier, akid.get(), false, "authorityKeyIdentifier");
}

const EVP_MD* signing_digest(EVP_PKEY* key) {
    // EdDSA signs the message itself and refuses a separate digest.
    if (EVP_PKEY_is_a(key, "ED25519") || EVP_PKEY_is_a(key, "ED448")) return nullptr;
    return EVP_sha256();
}

void sign(X509* x, EVP_PKEY* key) {
    if (X509_sign(x, key, signing_digest(key)) <= 0) fail("cannot sign the certificate");
}

// The same certificate, parsed back from its DER. A certificate built in
// memory is encoded afresh every time it is sent (each handshake); a parsed one
// keeps its encoding, so handshakes only copy it.
X509Ptr reparsed(X509* cert) {
    unsigned char* der = nullptr;
    const int len = i2d_X509(cert, &der);
    if (len <= 0) fail("cannot encode the certificate");
    const unsigned char* p = der;
    X509Ptr parsed(d2i_X509(nullptr, &p, len));
    OPENSSL_free(der);
    if (!parsed) fail("cannot parse the certificate just made");
    return parsed;
}

std::chrono::system_clock::time_point to_time_point(const ASN1_TIME* t) {
    std::tm tm{};
    if (!ASN1_TIME_to_tm(t, &tm)) fail("cannot read a certificate time");
    return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string pem_of(X509* cert) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || !PEM_write_bio_X509(bio.get(), cert)) fail("cannot encode the certificate as PEM");
    char* data = nullptr;
    long len = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(len));
}

// Creates `path` exclusively with exactly `mode` and lets `write` fill it
// through a BIO on the descriptor. The fd BIO is unbuffered, so a private key
// never sits in a stdio buffer.
template <class Write>
void write_new_file(const std::string& path, mode_t mode, Write write) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        int err = errno;
        if (err == EEXIST) throw CaError(path + ": already exists; refusing to overwrite");
        throw CaError(path + ": cannot create: " + std::strerror(err));
    }
    auto failed = [&](const std::string& why) {
        ::close(fd);
        ::unlink(path.c_str());
        throw CaError(path + ": " + why);
    };
    // The umask may have narrowed the mode; the contract fixes it exactly.
    if (::fchmod(fd, mode) != 0) failed(std::string("cannot set mode: ") + std::strerror(errno));
    {
        BioPtr bio(BIO_new_fd(fd, BIO_NOCLOSE));
        if (!bio || !write(bio.get()) || BIO_flush(bio.get()) <= 0) {
            std::string detail = openssl_errors();
            failed("cannot write" + (detail.empty() ? std::string() : ": " + detail));
        }
    }
    if (::fsync(fd) != 0) failed(std::string("cannot sync: ") + std::strerror(errno));
    if (::close(fd) != 0) {
        int err = errno;
        ::unlink(path.c_str());
        throw CaError(path + ": cannot close: " + std::strerror(err));
    }
}

void require_absent(const std::filesystem::path& p) {
    std::error_code ec;
    // symlink_status, so that a dangling symlink also counts as "exists".
    auto st = std::filesystem::symlink_status(p, ec);
    if (!ec && st.type() != std::filesystem::file_type::not_found)
        throw CaError(p.string() + ": already exists; refusing to overwrite");
}

int no_passphrase(char*, int, int, void*) {
    // Without this OpenSSL would prompt on the terminal for an encrypted key,
    // which would hang a daemon; an encrypted key is reported as an error instead.
    return -1;
}

BioPtr open_for_reading(const std::string& path) {
    BioPtr bio(BIO_new_file(path.c_str(), "r"));
    if (!bio) {
        int err = errno;
        ERR_clear_error();
        throw CaError(path + ": cannot open: " + std::strerror(err));
    }
    return bio;
}

GeneralNamePtr subject_alt_name(const std::string& host) {
    GeneralNamePtr name(GENERAL_NAME_new());
    if (!name) fail("cannot build the subjectAltName");
    unsigned char ip[16];
    int ip_len = 0;
    if (inet_pton(AF_INET, host.c_str(), ip) == 1)
        ip_len = 4;
    else if (inet_pton(AF_INET6, host.c_str(), ip) == 1)
        ip_len = 16;
    if (ip_len > 0) {
        // Clients match an IP literal only against iPAddress entries, never dNSName.
        OctetPtr value(ASN1_OCTET_STRING_new());
        if (!value || !ASN1_OCTET_STRING_set(value.get(), ip, ip_len)) fail("cannot build the IP subjectAltName");
        GENERAL_NAME_set0_value(name.get(), GEN_IPADD, value.release());
    } else {
        Ia5Ptr value(ASN1_IA5STRING_new());
        if (!value || !ASN1_STRING_set(value.get(), host.data(), static_cast<int>(host.size())))
            fail("cannot build the DNS subjectAltName");
        GENERAL_NAME_set0_value(name.get(), GEN_DNS, value.release());
    }
    return name;
}

void add_name_entry(X509_NAME* name, const char* field, std::string_view value) {
    if (!X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(value.data()),
                                    static_cast<int>(value.size()), -1, 0))
        fail(std::string("cannot set the ") + field + " of the certificate name");
}

}  // namespace

void create_ca_files(const std::string& dir, const std::string& common_name) {
    ERR_clear_error();
    if (common_name.empty() || common_name.size() > max_common_name)
        throw CaError("CA name must be 1 to 64 characters long");

    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw CaError(dir + ": cannot create directory: " + ec.message());
    const auto cert_path = std::filesystem::path(dir) / "ca.pem";
    const auto key_path = std::filesystem::path(dir) / "ca-key.pem";
    // Checked before any work so that the message names the file that is in the
    // way; O_EXCL below closes the race with a file appearing meanwhile.
    require_absent(cert_path);
    require_absent(key_path);

    EvpPkeyPtr key = generate_p256_key();
    X509Ptr cert(X509_new());
    if (!cert || !X509_set_version(cert.get(), X509_VERSION_3)) fail("cannot create the CA certificate");
    set_random_serial(cert.get());
    // Backdated an hour so that clients with a slightly slow clock accept it.
    if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -one_hour) ||
        !X509_time_adj_ex(X509_getm_notAfter(cert.get()), ca_validity_days, 0, nullptr))
        fail("cannot set the CA validity");

    NamePtr name(X509_NAME_new());
    if (!name) fail("cannot create the CA name");
    add_name_entry(name.get(), "O", "vaultgate");
    add_name_entry(name.get(), "CN", common_name);
    if (!X509_set_subject_name(cert.get(), name.get()) || !X509_set_issuer_name(cert.get(), name.get()))
        fail("cannot set the CA name");
    if (!X509_set_pubkey(cert.get(), key.get())) fail("cannot set the CA public key");

    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    // pathlen:0: this CA only ever signs leaves, never another CA.
    add_conf_extension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", "basicConstraints");
    add_conf_extension(cert.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign", "keyUsage");
    // AKI on a root is optional, but strict verifiers (OpenSSL's X509_STRICT,
    // which Python 3.13 enables) are happier with it.
    add_key_identifiers(cert.get(), cert.get());
    sign(cert.get(), key.get());

    write_new_file(key_path.string(), 0600, [&](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
    });
    try {
        write_new_file(cert_path.string(), 0644, [&](BIO* bio) { return PEM_write_bio_X509(bio, cert.get()) == 1; });
    } catch (...) {
        // Half a CA is worse than none: a rerun would refuse to overwrite the key.
        ::unlink(key_path.c_str());
        throw;
    }
}

namespace {

// A CA certificate that is still valid. Throws CaError naming the file.
X509Ptr read_ca_certificate(const std::string& cert_path) {
    BioPtr bio = open_for_reading(cert_path);
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) fail(cert_path + ": not a PEM certificate");
    // Also caches the extensions, so that later concurrent reads from mint() find
    // them ready.
    if (X509_check_ca(cert.get()) == 0) fail(cert_path + ": not a CA certificate");
    if (to_time_point(X509_get0_notAfter(cert.get())) <= std::chrono::system_clock::now())
        throw CaError(cert_path + ": CA certificate has expired");
    return cert;
}

EvpPkeyPtr read_private_key(const std::string& key_path) {
    BioPtr bio = open_for_reading(key_path);
    EvpPkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
    if (!key) fail(key_path + ": not an unencrypted PEM private key");
    return key;
}

void require_matching_key(X509* cert, EVP_PKEY* key, const std::string& cert_path, const std::string& key_path) {
    if (X509_check_private_key(cert, key) != 1) fail(key_path + ": key does not match the certificate in " + cert_path);
}

}  // namespace

CaFileProblems check_ca_files(const std::string& cert_path, const std::string& key_path) {
    ERR_clear_error();
    CaFileProblems problems;
    X509Ptr cert;
    EvpPkeyPtr key;
    try {
        cert = read_ca_certificate(cert_path);
    } catch (const CaError& e) {
        problems.cert = e.what();
    }
    try {
        key = read_private_key(key_path);
        if (cert) require_matching_key(cert.get(), key.get(), cert_path, key_path);
    } catch (const CaError& e) {
        problems.key = e.what();
    }
    ERR_clear_error();
    return problems;
}

std::unique_ptr<CertificateAuthority> CertificateAuthority::load(const std::string& cert_path,
                                                                 const std::string& key_path) {
    ERR_clear_error();
    std::unique_ptr<CertificateAuthority> ca(new CertificateAuthority());
    ca->cert_ = read_ca_certificate(cert_path);
    ca->key_ = read_private_key(key_path);
    require_matching_key(ca->cert_.get(), ca->key_.get(), cert_path, key_path);
    ca->is_root_ = X509_check_issued(ca->cert_.get(), ca->cert_.get()) == X509_V_OK;

    // One key pair for every leaf, as mitmproxy and Squid do: minting is then a
    // signature, not a key generation, and the cache stays cheap.
    ca->leaf_key_ = std::shared_ptr<EVP_PKEY>(generate_p256_key().release(), EVP_PKEY_free);
    return ca;
}

std::shared_ptr<const LeafCertificate> CertificateAuthority::mint(std::string_view host_view) const {
    ERR_clear_error();
    std::string host(host_view);
    // An IPv6 authority may still carry its brackets.
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) throw CaError("cannot mint a certificate for an empty host");
    if (host.find('\0') != std::string::npos) throw CaError("cannot mint a certificate for a host with NUL");

    const auto now = std::chrono::system_clock::now();
    const auto ca_not_after = to_time_point(X509_get0_notAfter(cert_.get()));
    auto not_after = std::chrono::time_point_cast<std::chrono::seconds>(now + leaf_lifetime);
    // A leaf outliving its issuer would fail verification at the end anyway.
    if (not_after > ca_not_after) not_after = std::chrono::time_point_cast<std::chrono::seconds>(ca_not_after);
    if (not_after <= now) throw CaError("the CA certificate has expired");

    X509Ptr cert(X509_new());
    if (!cert || !X509_set_version(cert.get(), X509_VERSION_3)) fail("cannot create a leaf certificate");
    set_random_serial(cert.get());
    if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -one_hour) ||
        !ASN1_TIME_set(X509_getm_notAfter(cert.get()), std::chrono::system_clock::to_time_t(not_after)))
        fail("cannot set the leaf validity");

    NamePtr subject(X509_NAME_new());
    if (!subject) fail("cannot create the leaf name");
    // CN is capped at 64 characters by X.520; the SAN carries the full name and
    // is what clients check.
    add_name_entry(subject.get(), "CN", std::string_view(host).substr(0, max_common_name));
    if (!X509_set_subject_name(cert.get(), subject.get()) ||
        !X509_set_issuer_name(cert.get(), X509_get_subject_name(cert_.get())))
        fail("cannot set the leaf names");
    if (!X509_set_pubkey(cert.get(), leaf_key_.get())) fail("cannot set the leaf public key");

    GeneralNamesPtr sans(GENERAL_NAMES_new());
    GeneralNamePtr san = subject_alt_name(host);
    if (!sans || !sk_GENERAL_NAME_push(sans.get(), san.get())) fail("cannot build the subjectAltName");
    san.release();  // now owned by sans
    add_extension(cert.get(), NID_subject_alt_name, sans.get(), false, "subjectAltName");

    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert_.get(), cert.get(), nullptr, nullptr, 0);
    add_conf_extension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE", "basicConstraints");
    // The leaf key is EC, so it never encrypts a key: digitalSignature only.
    add_conf_extension(cert.get(), &ctx, NID_key_usage, "critical,digitalSignature", "keyUsage");
    add_conf_extension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth", "extendedKeyUsage");
    add_key_identifiers(cert.get(), cert_.get());
    sign(cert.get(), key_.get());

    auto leaf = std::make_shared<LeafCertificate>();
    leaf->cert = reparsed(cert.get());
    leaf->key = leaf_key_;
    leaf->not_after = not_after;
    return leaf;
}

std::string CertificateAuthority::cert_pem() const {
    ERR_clear_error();
    return pem_of(cert_.get());
}

std::shared_ptr<const LeafCertificate> LeafCache::get(std::string_view host) {
    auto fresh = [](const LeafCertificate& leaf) {
        return leaf.not_after - std::chrono::system_clock::now() > leaf_refresh_margin;
    };
    const std::string key(host);
    {
        std::lock_guard lock(mutex_);
        if (auto it = index_.find(key); it != index_.end() && fresh(*it->second->second)) {
            lru_.splice(lru_.begin(), lru_, it->second);
            ++hits_;
            return it->second->second;
        }
        ++misses_;
    }

    // Minted outside the lock so that one signature never stalls handshakes for
    // hosts that are already cached.
    std::shared_ptr<const LeafCertificate> leaf = ca_.mint(host);

    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
        // Another thread may have minted a fresh one meanwhile; then keep that,
        // so that every caller shares one object. A stale entry is replaced.
        if (!fresh(*it->second->second)) it->second->second = leaf;
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
    }
    lru_.emplace_front(key, leaf);
    index_.emplace(key, lru_.begin());
    const std::size_t limit = capacity_ == 0 ? 1 : capacity_;
    while (lru_.size() > limit) {
        index_.erase(lru_.back().first);
        lru_.pop_back();
    }
    return leaf;
}

std::size_t LeafCache::size() const {
    std::lock_guard lock(mutex_);
    return lru_.size();
}

}  // namespace vaultgate
