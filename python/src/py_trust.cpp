// jitwarm.cache_keygen, CacheKeyPair and the trust keyword arguments
// (TrustArguments): the host API's trust settings, as they are.
#include "py_trust.hpp"

#include <fmt/format.h>

#include "py_errors.hpp"
#include "py_values.hpp"

namespace jitwarm::python {

void TrustArguments::apply(RuntimeOptions& o) const {
  if (!signing_key.is_none()) o.signing_key = path_from(signing_key);
  if (!trusted_keys.is_none()) {
    // One key (text or file) or a list of them; a str is one, not a list of
    // characters.
    if (py::isinstance<py::str>(trusted_keys) ||
        !py::isinstance<py::iterable>(trusted_keys)) {
      o.trusted_keys.push_back(path_from(trusted_keys));
    } else {
      for (const py::handle key : trusted_keys)
        o.trusted_keys.push_back(path_from(key));
    }
  }
  if (!remote_cache_mode.is_none()) {
    if (!py::isinstance<py::str>(remote_cache_mode))
      invalid("remote_cache_mode: use 'read-write' or 'read-only'");
    o.remote_cache_mode = call_core([&] {
      return parse_remote_cache_mode(remote_cache_mode.cast<std::string>());
    });
  }
}

void bind_trust(py::module_& m) {
  py::class_<CacheKeyPair>(m, "CacheKeyPair",
                           "A signing key pair, as cache_keygen wrote it "
                           "(docs/python.md, 'Trust').")
      .def_readonly("secret_key_file", &CacheKeyPair::secret_key_file)
      .def_readonly("public_key_file", &CacheKeyPair::public_key_file)
      .def_readonly("public_key", &CacheKeyPair::public_key)
      .def_readonly("key_id", &CacheKeyPair::key_id)
      .def("__repr__", [](const CacheKeyPair& k) {
        return fmt::format("<CacheKeyPair {} key_id={}>", k.secret_key_file,
                           k.key_id);
      });
  m.def(
      "cache_keygen",
      [](py::object path) {
        const std::string file = path_from(path);
        return call_core([&] { return write_cache_key_pair(file); });
      },
      py::arg("path"),
      "Writes a new Ed25519 key pair: the secret key to `path` (mode 0600), "
      "the public key to `path`.pub; never overwrites either.");
}

}  // namespace jitwarm::python
