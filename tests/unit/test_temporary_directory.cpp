// Tests of support/temporary_directory: a directory of the process's own
// under $TMPDIR, gone with its contents when the object goes, and a clear
// error (never a crash) where it cannot be made.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "temporary_directory.hpp"

namespace fs = std::filesystem;
using jitwarm::detail::TemporaryDirectory;

namespace {

// TMPDIR set for the scope, as it was after.
struct TmpdirSetting {
  std::optional<std::string> previous;
  explicit TmpdirSetting(const std::string& value) {
    if (const char* old = ::getenv("TMPDIR")) previous = old;
    ::setenv("TMPDIR", value.c_str(), 1);
  }
  ~TmpdirSetting() {
    if (previous) {
      ::setenv("TMPDIR", previous->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
};

}  // namespace

TEST_CASE(
    "given a prefix, then the directory is new, private, under TMPDIR and "
    "removed with its contents when the object goes") {
  TemporaryDirectory base("jitwarm-tmpdir-test-");
  const TmpdirSetting tmpdir(base.path().string());
  fs::path made;
  {
    const TemporaryDirectory one("jitwarm-test-");
    const TemporaryDirectory two("jitwarm-test-");
    made = one.path();
    CHECK(one.path() != two.path());
    CHECK(made.parent_path() == base.path());
    CHECK(made.filename().string().rfind("jitwarm-test-", 0) == 0);
    CHECK((fs::status(made).permissions() & fs::perms::all) ==
          fs::perms::owner_all);
    fs::create_directories(made / "sub");
    std::ofstream(made / "sub" / "file") << "bytes";
  }
  CHECK_FALSE(fs::exists(made));
  CHECK(fs::is_empty(base.path()));
}

TEST_CASE(
    "given a TMPDIR that is not a directory, then the directory is made "
    "under /tmp instead") {
  TemporaryDirectory base("jitwarm-tmpdir-test-");
  const TmpdirSetting tmpdir((base.path() / "missing").string());
  const TemporaryDirectory made("jitwarm-test-");
  CHECK(made.path().parent_path() == fs::path("/tmp"));
  CHECK(fs::is_directory(made.path()));
}

TEST_CASE(
    "given a place where no directory can be made, then the error names "
    "where, as a system_error") {
  TemporaryDirectory base("jitwarm-tmpdir-test-");
  const TmpdirSetting tmpdir(base.path().string());
  try {
    const TemporaryDirectory never("missing/jitwarm-test-");
    FAIL("a directory was made under a missing directory");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()).find(base.path().string()) !=
          std::string::npos);
    CHECK(e.code() == std::errc::no_such_file_or_directory);
  }
  CHECK(fs::is_empty(base.path()));
}
