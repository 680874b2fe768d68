// TempDir: a fresh, empty directory for one test, made with mkdtemp (so two
// tests, or the processes a test forks, never share one) and removed with
// everything in it when the test is done.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace jitwarm::test {

class TempDir {
 public:
  // `purpose` names the directory: /tmp/jitwarm-<purpose>-XXXXXX.
  explicit TempDir(std::string_view purpose) {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           ("jitwarm-" + std::string(purpose) + "-XXXXXX"))
                              .string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path path;
};

}  // namespace jitwarm::test
