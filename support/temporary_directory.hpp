// A directory of this process's own under the system's temporary directory
// ($TMPDIR when it names a directory, else /tmp), removed with everything in it
// when the object goes: process-parallel warmup's private stores and the HIP
// plugin's clang work directory. Its failure is a std::system_error naming
// where it could not be made; each caller turns it into its own side's error
// (the core's status, a plugin's PluginError).
#pragma once

#include <filesystem>
#include <string_view>

namespace jitwarm::detail {

class TemporaryDirectory {
 public:
  // A new directory named <prefix>XXXXXX (mkdtemp: unique, mode 0700).
  explicit TemporaryDirectory(std::string_view prefix);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace jitwarm::detail
