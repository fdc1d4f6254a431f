// The one reader of secret files: the caller's whitespace rule, the size cap,
// regular files only unless the caller takes pipes, and errors that name the
// path and never the content.
#include "vaultgate/util/secret_file.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace vaultgate {
namespace {

using test::TempDir;

SecretFileError read_error(const std::string& path, const SecretFileRules& rules) {
    try {
        read_secret_file(path, rules);
    } catch (const SecretFileError& e) {
        return e;
    }
    ADD_FAILURE() << path << " was read";
    return SecretFileError(path, SecretFileError::Problem::open, 0, "");
}

TEST(SecretFile, WhitespaceIsTheCallersRule) {
    const TempDir dir;
    const auto crlf = dir.write("crlf", " sk-1 \r\n");
    const auto two = dir.write("two", "sk-2\n\n");
    EXPECT_EQ(read_secret_file(crlf, {64, Whitespace::keep}), " sk-1 \r\n");
    EXPECT_EQ(read_secret_file(crlf, {64, Whitespace::drop_line_ending}), " sk-1 ");
    // One line ending, and nothing else.
    EXPECT_EQ(read_secret_file(two, {64, Whitespace::drop_line_ending}), "sk-2\n");
    EXPECT_EQ(read_secret_file(dir.write("bin", std::string("\0\xff\n", 3)), {64, Whitespace::keep}),
              std::string("\0\xff\n", 3));
}

TEST(SecretFile, TheCapIsInclusiveAndALargerFileIsRefusedWithoutItsContent) {
    const TempDir dir;
    const auto path = dir.write("big", std::string(64, 'q'));
    EXPECT_EQ(read_secret_file(path, {64}).size(), 64u);
    const auto e = read_error(path, {63});
    EXPECT_EQ(e.problem(), SecretFileError::Problem::too_large);
    EXPECT_EQ(std::string(e.what()), path + ": larger than 63 bytes");
}

TEST(SecretFile, MissingFileNamesPathAndErrno) {
    const TempDir dir;
    const auto e = read_error(dir.file("absent"), {64});
    EXPECT_EQ(e.problem(), SecretFileError::Problem::open);
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_EQ(std::string(e.what()), dir.file("absent") + ": No such file or directory");
}

// A FIFO with no writer would block a reader forever; a server refuses it at
// once. The CLI takes pipes ("--value-file <(pass x)").
TEST(SecretFile, AFifoIsRefusedWithoutHangingUnlessPipesAreTaken) {
    const TempDir dir;
    const auto fifo = dir.file("fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto e = read_error(fifo, {64});
    EXPECT_EQ(e.problem(), SecretFileError::Problem::not_regular);
    EXPECT_EQ(e.reason(), "not a regular file");
    EXPECT_EQ(read_error(dir.path(), {64}).problem(), SecretFileError::Problem::not_regular);

    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], "tok\n", 4), 4);
    ::close(fds[1]);
    EXPECT_EQ(read_secret_file("/dev/fd/" + std::to_string(fds[0]), {64, Whitespace::drop_line_ending, false}), "tok");
    ::close(fds[0]);
}

TEST(SecretFile, DescriptorsAreReadToTheirEnd) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], "{\"A\":\"b\"}\n", 10), 10);
    ::close(fds[1]);
    EXPECT_EQ(read_secret_fd(fds[0], "stdin", {64}), "{\"A\":\"b\"}\n");
    ::close(fds[0]);
    try {
        read_secret_fd(-1, "stdin", {64});
        ADD_FAILURE() << "read a closed descriptor";
    } catch (const SecretFileError& e) {
        EXPECT_EQ(e.problem(), SecretFileError::Problem::read);
        EXPECT_EQ(std::string(e.what()).rfind("stdin: ", 0), 0u) << e.what();
    }
}

}  // namespace
}  // namespace vaultgate
