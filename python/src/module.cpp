// jitwarm._jitwarm: the extension module behind the `jitwarm` package. The
// pure-Python parts (python/jitwarm/*.py) build the public API on it.
#include <pybind11/pybind11.h>

#include "py_cache.hpp"
#include "py_errors.hpp"
#include "py_kernel.hpp"
#include "py_overrides.hpp"
#include "py_runtime.hpp"
#include "py_trust.hpp"
#include "py_values.hpp"
#include "py_warmup.hpp"

PYBIND11_MODULE(_jitwarm, m) {
  namespace jp = jitwarm::python;
  m.doc() = "jitwarm's core, for Python: see the jitwarm package.";
  m.attr("abi_version") = jw_abi_version();
  jp::bind_errors(m);
  jp::bind_values(m);
  jp::bind_runtime(
      m);  // before the kernel type: Kernel.schema returns a KernelSchema
  jp::bind_kernel(m);
  jp::bind_cache(m);
  jp::bind_trust(m);
  jp::bind_warmup(m);
  jp::bind_overrides(m);
}
