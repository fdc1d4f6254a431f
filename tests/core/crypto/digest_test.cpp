#include "vaultgate/crypto/digest.hpp"
#include "vaultgate/crypto/key_derivation.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vaultgate {
namespace {

Secret key_from(char seed) { return Secret(std::string(32, seed)); }

const std::string real_secret = "sk_live_REALsecretValue_0123456789abcdef";

TEST(Fingerprint, StableKeyedAndOpaque) {
    const auto f = credential_fingerprint(key_from(1), real_secret);
    EXPECT_EQ(f, credential_fingerprint(key_from(1), real_secret));
    EXPECT_EQ(f, credential_fingerprint(Secret(std::string(key_from(1).reveal())), std::string(real_secret)));
    ASSERT_EQ(f.size(), std::string("hmac-sha256:").size() + 16);
    EXPECT_TRUE(f.starts_with("hmac-sha256:"));
    EXPECT_EQ(f.substr(12).find_first_not_of("0123456789abcdef"), std::string::npos) << f;
    EXPECT_NE(f, credential_fingerprint(key_from(1), real_secret + "x"));
    EXPECT_NE(f, credential_fingerprint(key_from(2), real_secret));
    EXPECT_NE(credential_fingerprint(key_from(1), ""), credential_fingerprint(key_from(1), " "));
    EXPECT_EQ(f.find("sk_live"), std::string::npos);
    // Not a plain digest of the value.
    EXPECT_EQ(token_digest(real_secret).find(f.substr(12)), std::string::npos);
    EXPECT_THROW(credential_fingerprint(Secret("short"), "x"), CryptoError);
}

TEST(TokenDigest, IsHexSha256) {
    EXPECT_EQ(token_digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(token_digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(ConstantTimeEqual, ComparesBytes) {
    EXPECT_TRUE(constant_time_equal("", ""));
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "ab"));
    EXPECT_FALSE(constant_time_equal("", "a"));
    EXPECT_TRUE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0b", 3)));
    EXPECT_FALSE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

}  // namespace
}  // namespace vaultgate
