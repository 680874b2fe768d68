#include "temporary_directory.hpp"

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <string>
#include <system_error>

namespace jitwarm::detail {

namespace fs = std::filesystem;

TemporaryDirectory::TemporaryDirectory(std::string_view prefix) {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);
  if (error) base = "/tmp";
  std::string pattern = (base / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(
        errno, std::generic_category(),
        "cannot create a temporary directory under " + base.string());
  }
  path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ignored;  // a leftover directory is not worth a throw
  fs::remove_all(path_, ignored);
}

}  // namespace jitwarm::detail
