// RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 3.3) over OpenSSL 3's EVP
// interface. Nothing here puts key bytes or OpenSSL's view of them in a message.
#include "vaultgate/minting/jwt.hpp"

#include "vaultgate/crypto/openssl_owned.hpp"
#include "vaultgate/util/encoding.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace vaultgate::minting {

namespace {

using BioPtr = Owned<BIO, BIO_free_all>;
using PkeyPtr = Owned<EVP_PKEY, EVP_PKEY_free>;
using MdCtxPtr = Owned<EVP_MD_CTX, EVP_MD_CTX_free>;

// RFC 7518 3.3: a key of 2048 bits or more must be used.
constexpr int min_rsa_bits = 2048;

// Refuses a passphrase: an encrypted key fails to load instead of prompting.
int no_passphrase(char*, int, int, void*) { return -1; }

// A credential value holds no line break (validation::check_credential_value),
// so a PEM key is stored on one line with its breaks written "\n", as in a
// JSON string or an env file; the PEM reader needs the breaks back.
bool is_one_line_pem(std::string_view text) {
    return text.find('\n') == std::string_view::npos && text.find("\\n") != std::string_view::npos;
}

Secret with_line_breaks(std::string_view text) {
    std::string pem;
    pem.reserve(text.size());  // the secret is written once, never reallocated
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool escape = text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n';
        pem.push_back(escape ? '\n' : text[i]);
        if (escape) ++i;
    }
    return Secret(std::move(pem));
}

PkeyPtr load_rsa_key(const Secret& stored) {
    const Secret unescaped = is_one_line_pem(stored.reveal()) ? with_line_breaks(stored.reveal()) : Secret();
    const auto text = unescaped.empty() ? stored.reveal() : unescaped.reveal();
    BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
    if (!bio) throw MintError("cannot read the private key: out of memory");
    // PEM_read_bio_PrivateKey reads both "RSA PRIVATE KEY" (PKCS#1) and "PRIVATE KEY" (PKCS#8).
    PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
    // OpenSSL's queue says why, in terms of the key's contents; it stays out of the message.
    ERR_clear_error();
    if (!key) throw MintError("the private key is not an unencrypted PEM private key (PKCS#1 or PKCS#8)");
    if (!EVP_PKEY_is_a(key.get(), "RSA")) throw MintError("the private key is not an RSA key, which RS256 needs");
    if (EVP_PKEY_get_bits(key.get()) < min_rsa_bits) throw MintError("the RSA private key is shorter than 2048 bits");
    return key;
}

std::vector<unsigned char> rs256_signature(EVP_PKEY* key, std::string_view input) {
    MdCtxPtr ctx(EVP_MD_CTX_new());
    std::size_t size = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(input.data());
    if (!ctx || EVP_DigestSignInit_ex(ctx.get(), nullptr, "SHA256", nullptr, nullptr, key, nullptr) <= 0 ||
        EVP_DigestSign(ctx.get(), nullptr, &size, data, input.size()) <= 0) {
        ERR_clear_error();
        throw MintError("cannot set up an RS256 signature");
    }
    std::vector<unsigned char> signature(size);
    if (EVP_DigestSign(ctx.get(), signature.data(), &size, data, input.size()) <= 0) {
        ERR_clear_error();
        throw MintError("cannot compute an RS256 signature");
    }
    signature.resize(size);
    return signature;
}

}  // namespace

void check_rs256_key(const Secret& pem_private_key) { load_rsa_key(pem_private_key); }

Secret sign_rs256_jwt(const nlohmann::json& claims, const Secret& pem_private_key, std::string_view key_id) {
    const PkeyPtr key = load_rsa_key(pem_private_key);
    nlohmann::json header{{"alg", "RS256"}, {"typ", "JWT"}};
    if (!key_id.empty()) header["kid"] = key_id;
    // The header and claims name the signer and the audience, not a secret; the
    // signed JWT is a credential, so it is built in a buffer reserved up front.
    std::string header_text, claims_text;
    try {
        header_text = header.dump();
        claims_text = claims.dump();
    } catch (const nlohmann::json::type_error&) {
        throw MintError("the JWT's header or claims are not valid UTF-8");
    }
    const std::size_t signature_size = static_cast<std::size_t>(EVP_PKEY_get_size(key.get()));
    std::string jwt;
    jwt.reserve(base64_size(header_text.size()) + base64_size(claims_text.size()) + base64_size(signature_size) + 2);
    append_base64(jwt, header_text, Base64Alphabet::url, false);
    jwt += '.';
    append_base64(jwt, claims_text, Base64Alphabet::url, false);
    const auto signature = rs256_signature(key.get(), jwt);
    jwt += '.';
    append_base64(jwt, std::string_view(reinterpret_cast<const char*>(signature.data()), signature.size()),
                  Base64Alphabet::url, false);
    return Secret(std::move(jwt));
}

}  // namespace vaultgate::minting
