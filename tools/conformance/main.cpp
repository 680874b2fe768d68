// main.cpp — jitwarm-conformance, a standalone driver of
// run_conformance_command (the same code as `jitwarm conformance`), used by
// the conformance tests so they do not depend on the CLI's dispatch.
#include <string>
#include <vector>

#include "conformance.hpp"

int main(int argc, char** argv) {
  return jitwarm::tools::run_conformance_command(
      std::vector<std::string>(argv + 1, argv + argc));
}
