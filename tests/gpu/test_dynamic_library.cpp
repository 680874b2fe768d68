// DynamicLibrary and LibraryFunction (plugins/common/dynamic_library): a
// library that is absent says why with every name tried; a symbol that is
// absent does not stop the library from opening, and calling it is an error
// that names the symbol and the library.
#include <jitwarm/plugin.hpp>

#include "dynamic_library.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using jitwarm::gpu::DynamicLibrary;
using jitwarm::gpu::LibraryFunction;

TEST_CASE("given libraries that do not exist, then the error lists each") {
  const DynamicLibrary library = DynamicLibrary::open_first(
      {"libjitwarm-no-such-vendor.so.1", "libjitwarm-no-such-vendor.so"});
  CHECK_FALSE(library.is_open());
  CHECK(library.name().empty());
  CHECK(library.error().find("libjitwarm-no-such-vendor.so.1") !=
        std::string::npos);
  CHECK(library.error().find("libjitwarm-no-such-vendor.so:") !=
        std::string::npos);
  const LibraryFunction<int (*)(int)> function(library, "abs");
  CHECK_FALSE(function.available());
  CHECK_THROWS_WITH_AS(function(1), "symbol abs is missing from (not loaded)",
                       jitwarm::plugin::PluginError);
}

TEST_CASE(
    "given a library, then present symbols call through and missing "
    "ones name themselves when called") {
  const DynamicLibrary library =
      DynamicLibrary::open_first({"libjitwarm-no-such-vendor.so", "libc.so.6"});
  REQUIRE(library.is_open());
  CHECK(library.name() == "libc.so.6");
  const LibraryFunction<decltype(&::abs)> abs_function(library, "abs");
  REQUIRE(abs_function.available());
  CHECK(abs_function(-7) == 7);
  const LibraryFunction<int (*)()> missing(library, "jitwarm_no_such_symbol");
  CHECK_FALSE(missing.available());
  try {
    missing();
    FAIL("calling a missing symbol must throw");
  } catch (const jitwarm::plugin::PluginError& e) {
    CHECK(e.status() == JW_ERROR_UNSUPPORTED);
    CHECK(std::string(e.what()) ==
          "symbol jitwarm_no_such_symbol is missing from libc.so.6");
  }
}
