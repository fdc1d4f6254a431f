#pragma once
// Test fixtures shared by the unit and integration tests: a scratch directory
// and a scoped environment variable.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace vaultgate::test {

// A fresh directory under the system temp directory, removed at destruction.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "vaultgate-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
    // Writes `content` to the file `name` with `mode`, and returns its path.
    std::string write(std::string_view name, std::string_view content, int mode = 0600) const {
        const std::string p = file(name);
        std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
        ::chmod(p.c_str(), static_cast<mode_t>(mode));
        return p;
    }

private:
    std::string path_;
};

// Sets (or, with nullptr, unsets) an environment variable for one test and
// restores the old state at destruction.
class ScopedEnv {
public:
    explicit ScopedEnv(const char* name, const char* value = nullptr) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_.c_str(), old_->c_str(), 1);
        else
            ::unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

    void set(const std::string& value) { ::setenv(name_.c_str(), value.c_str(), 1); }

private:
    std::string name_;
    std::optional<std::string> old_;
};

}  // namespace vaultgate::test
