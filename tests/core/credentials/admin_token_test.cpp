// The admin token file, as the server and the CLI both read it.
#include "vaultgate/credentials/admin_token.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vaultgate {
namespace {

using test::TempDir;

std::string token_error(const std::string& path) {
    try {
        read_admin_token_file(path, "admin.token_file");
    } catch (const AdminTokenError& e) {
        return e.what();
    }
    return "";
}

TEST(AdminTokenFile, WhitespaceAroundTheTokenIsNotPartOfIt) {
    const TempDir dir;
    EXPECT_EQ(read_admin_token_file(dir.write("t", "  0123456789abcdef-tok\r\n"), "token file"),
              "0123456789abcdef-tok");
}

TEST(AdminTokenFile, ProblemsNameTheSettingAndPathNeverTheToken) {
    const TempDir dir;
    const auto short_file = dir.write("short", "short-tok3n\n");
    const auto error = token_error(short_file);
    EXPECT_EQ(error, "admin.token_file " + short_file + " must hold a token of at least 16 characters");
    EXPECT_EQ(error.find("short-tok3n"), std::string::npos);
    EXPECT_EQ(token_error(dir.file("absent")),
              "admin.token_file " + dir.file("absent") + ": No such file or directory");
    const auto inner = dir.write("inner",
                                 "0123456789\x01"
                                 "abcdef");
    EXPECT_EQ(token_error(inner), "admin.token_file " + inner + " holds a control character inside the token");
}

}  // namespace
}  // namespace vaultgate
