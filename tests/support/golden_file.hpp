// Golden files: text a test makes compared with a checked-in file under
// JITWARM_TEST_GOLDEN_DIR, rewritten instead when JITWARM_UPDATE_GOLDEN is
// set (after a deliberate format change).
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace jitwarm::test {

// Lower-case hex of `bytes`, two digits each.
inline std::string hex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

// Checks `now` against the golden file `name`; `on_change` tells the reader
// what a difference means and what to do ("bump kFormatVersion in ...").
inline void check_golden(const std::string& name, const std::string& now,
                         const std::string& on_change) {
  const std::string path = std::string(JITWARM_TEST_GOLDEN_DIR) + "/" + name;
  if (std::getenv("JITWARM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << now;
  }
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path);
  std::ostringstream golden;
  golden << in.rdbuf();
  CHECK_MESSAGE(golden.str() == now,
                on_change << " and regenerate with JITWARM_UPDATE_GOLDEN=1");
}

}  // namespace jitwarm::test
