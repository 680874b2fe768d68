#include "names.hpp"

#include <fmt/format.h>
#include <fnmatch.h>
#include <jitwarm/jitwarm.hpp>

#include <algorithm>

#include "cli.hpp"

namespace jitwarm::cli {
namespace {

bool is_glob(std::string_view filter) {
  return filter.find_first_of("*?[") != std::string_view::npos;
}

}  // namespace

void check_kernel_filter(std::string_view filter,
                         const std::vector<std::string>& kernels) {
  if (!is_glob(filter)) {
    (void)resolve_kernel_name(filter, kernels);
    return;
  }
  const std::string glob(filter);
  for (const std::string& kernel : kernels) {
    const std::string short_name(short_kernel_name(kernel));
    if (fnmatch(glob.c_str(), kernel.c_str(), 0) == 0 ||
        fnmatch(glob.c_str(), short_name.c_str(), 0) == 0) {
      return;
    }
  }
  throw Error(JW_ERROR_NOT_FOUND,
              fmt::format("no kernel matches '{}'", filter));
}

std::string expand_target(std::string_view typed) {
  try {
    return parse_target(typed);
  } catch (const Error& e) {
    throw usage_error(e.what());  // a word the command line got wrong
  }
}

}  // namespace jitwarm::cli
